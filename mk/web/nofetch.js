// Linked (--pre-js) into the programs built to run under node (mk/web.mk).
// emscripten 3.1.6's loader fetches the .wasm whenever fetch() exists,
// which it does in node >= 18, and fails on a file path; this name hides
// node's fetch from the loader alone, which then reads the file.
var fetch;
