// The page around the game (demo/web/index.html): the loading bar, the
// keys given to the canvas, and the script playground: a CodeMirror
// editor over the game's own scripts (the page's files, /scripts/...),
// whose Save writes the file and hot-reloads it through weft's reload
// path (web_reload -> weft_reload_file), errors shown with file:line,
// and Share, a link carrying the edited script. Bundled with CodeMirror
// by esbuild at build time (mk/web.mk); nothing of it is vendored.
import { EditorView, basicSetup } from "codemirror";
import { keymap } from "@codemirror/view";
import { EditorState } from "@codemirror/state";
import { StreamLanguage } from "@codemirror/language";
import { lua } from "@codemirror/legacy-modes/mode/lua";

const $ = (id) => document.getElementById(id);
const canvas = $("canvas");
const errors = $("errors");
const note = $("note");
const picker = $("file");

// What the page measured, read by tests/web/page_test.js.
const stats = (window.weftPage = {
  start: performance.now(),
  firstFrame: 0,    // ms from the page's start to the game's first picture
  out: [],          // the game's stdout, line by line
  err: [],          // its stderr
  reloads: [],      // {file, ok, ms, lines}
  view: null,       // the editor (CodeMirror's EditorView)
  ready: false,     // the game drew and the playground is open
});

// ---- the game ----

let shown = [];     // the error lines in the box now
function showErrors(lines) {
  shown = lines;
  errors.textContent = lines.join("\n");
  errors.hidden = lines.length === 0;
}

let capturing = null; // stderr lines of the reload in progress
const Module = (window.Module = {
  canvas,
  // No watcher in the page: the playground hands each save to weft.
  arguments: ["--no-watch"],
  preRun: [
    () => {
      // SDL takes keys from the canvas only, so typing in the editor
      // stays in the editor (focus the game by clicking it).
      Module.ENV.SDL_EMSCRIPTEN_KEYBOARD_ELEMENT = "#canvas";
      // ?renderer=software|opengles2: SDL's renderer (default: SDL's choice)
      const renderer = new URLSearchParams(location.search).get("renderer");
      if (renderer) Module.ENV.SDL_RENDER_DRIVER = renderer;
    },
  ],
  print(line) {
    stats.out.push(line);
    console.log(line);
  },
  printErr(line) {
    stats.err.push(line);
    console.warn(line);
    if (capturing) capturing.push(line);
    else if (/^script error: /.test(line)) showErrors([...shown, line.replace(/^script error: /, "")]);
  },
  setStatus(text) {
    const m = /\((\d+(?:\.\d+)?)\/(\d+)\)/.exec(text);
    if (m) $("meter-fill").style.width = `${(100 * Number(m[1])) / Number(m[2])}%`;
    if (text) $("status").textContent = text.replace(/\s*\(.*\)/, "...");
  },
  onRuntimeInitialized() {
    $("meter-fill").style.width = "100%";
    $("status").textContent = "Starting...";
    waitForFirstFrame();
  },
  onExit(code) {
    $("loading").hidden = false;
    $("status").textContent = `The game ended (exit ${code}). Reload the page to play again.`;
  },
});

function waitForFirstFrame() {
  if (Module._web_drawn && Module._web_drawn() > 0) {
    stats.firstFrame = performance.now() - stats.start;
    $("loading").hidden = true;
    canvas.focus();
    openPlayground();
    return;
  }
  requestAnimationFrame(waitForFirstFrame);
}

canvas.addEventListener("mousedown", () => canvas.focus());

// F11: the game alone fills the screen. The page takes the key before
// SDL sees it, as a browser grants full screen only inside the key's own
// event (SDL would ask a frame later).
window.addEventListener("keydown", (e) => {
  if (e.key !== "F11" || document.activeElement !== canvas) return;
  e.preventDefault();
  e.stopPropagation();
  if (document.fullscreenElement) document.exitFullscreen();
  else $("stage").requestFullscreen().then(() => canvas.focus(), () => {});
}, true);

// ---- the playground ----

const original = new Map(); // file -> its text as shipped
const edited = new Map();   // file -> its text in the editor, not saved
let current = null;
let view = null;

function listScripts(dir, out) {
  for (const name of Module.FS.readdir(`/scripts/${dir}`)) {
    if (name === "." || name === "..") continue;
    const rel = dir ? `${dir}/${name}` : name;
    const st = Module.FS.stat(`/scripts/${rel}`);
    if (Module.FS.isDir(st.mode)) listScripts(rel, out);
    else if (name.endsWith(".lua") && !name.endsWith("_test.lua")) out.push(rel);
  }
  return out;
}

function readScript(file) {
  if (!original.has(file)) original.set(file, Module.FS.readFile(`/scripts/${file}`, { encoding: "utf8" }));
  return Module.FS.readFile(`/scripts/${file}`, { encoding: "utf8" });
}

function open(file, text) {
  if (current && view) edited.set(current, view.state.doc.toString());
  current = file;
  picker.value = file;
  const doc = text ?? edited.get(file) ?? readScript(file);
  view.setState(newState(doc));
}

function newState(doc) {
  return EditorState.create({ doc, extensions: extensions() });
}

function extensions() {
  return [
    basicSetup,
    StreamLanguage.define(lua),
    EditorView.lineWrapping,
    keymap.of([{ key: "Mod-s", preventDefault: true, run: () => (save(), true) }]),
    EditorView.theme({ "&": { height: "100%", fontSize: "13px" }, ".cm-scroller": { overflow: "auto" } }, { dark: true }),
  ];
}

// Writes the script into the page's files and reloads it into the running
// game: weft compiles it, and on success replaces the module's tasks at
// once (on failure nothing changes and the error names its file:line).
function save(file = current, text = view.state.doc.toString()) {
  readScript(file); // keep the shipped text for Revert
  Module.FS.writeFile(`/scripts/${file}`, text);
  const t0 = performance.now();
  capturing = [];
  let rc;
  try {
    rc = Module.ccall("web_reload", "number", ["string"], [file]);
  } finally {
    var lines = capturing;
    capturing = null;
  }
  const ok = rc === 0;
  stats.reloads.push({ file, ok, ms: performance.now() - t0, lines });
  if (ok) {
    showErrors([]);
    note.textContent = `${file} reloaded`;
    note.className = "good";
  } else if (lines.length === 0) {
    // not loaded yet (its guards not spawned): the game reads the saved
    // file when it first needs it
    showErrors([]);
    note.textContent = `${file} saved: the game loads it when it first needs it`;
    note.className = "good";
  } else {
    const msgs = lines.filter((l) => !/^stack traceback:|^\s/.test(l)).map((l) => l.replace(/^(script error|weft): /, ""));
    showErrors(msgs.length ? msgs : [`${file}: not reloaded (${rc})`]);
    note.textContent = `${file} not reloaded: the game runs the last good version`;
    note.className = "";
  }
  return ok;
}

// ---- share: the script in the link ----

function encode(text) {
  const bytes = new TextEncoder().encode(text);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function decode(s) {
  const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/"));
  return new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
}

function shareLink() {
  const params = new URLSearchParams({ file: current, lua: encode(view.state.doc.toString()) });
  return `${location.origin}${location.pathname}#${params}`;
}

$("share").addEventListener("click", async () => {
  const link = shareLink();
  history.replaceState(null, "", link);
  try {
    await navigator.clipboard.writeText(link);
    note.textContent = "link copied: it opens the game with this script";
  } catch {
    note.textContent = "the link is in the address bar";
  }
  note.className = "good";
});

$("save").addEventListener("click", () => save());
$("revert").addEventListener("click", () => {
  if (!original.has(current)) return;
  edited.delete(current);
  view.setState(newState(original.get(current)));
  save();
});
picker.addEventListener("change", () => open(picker.value));

function openPlayground() {
  const files = listScripts("", []).sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  for (const f of files) picker.add(new Option(f, f));
  view = new EditorView({ parent: $("editor"), state: newState("") });
  stats.view = view;
  const shared = new URLSearchParams(location.hash.slice(1));
  if (shared.get("file") && shared.get("lua") && files.includes(shared.get("file"))) {
    const file = shared.get("file");
    let text;
    try {
      text = decode(shared.get("lua"));
    } catch {
      text = null;
    }
    open(file, text ?? undefined);
    if (text != null) save(file, text);
  } else {
    open("ai/patrol.lua");
  }
  stats.ready = true;
}

// The guards' brains first, then the cinematics, the rest after.
function rank(f) {
  return f.startsWith("ai/") ? 0 : f.startsWith("cinematics/") ? 1 : f.startsWith("lib/") ? 2 : 3;
}
