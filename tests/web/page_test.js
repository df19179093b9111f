// The web build's page in Debian's headless Chromium (make test-web),
// driven through puppeteer-core (npm, into build-web/node) over the
// DevTools protocol: the page loads, the intro plays, Esc skips it, the
// arrow keys move the thief, F1 and F2 show their overlays; the
// playground's save reaches the running game (a guard's brain edited
// changes what the guards do within a second), a syntax error shows with
// its file:line and clears on the fix, and a shared link opens the game
// with the shared script. Screenshots go to build-web/page-test/; the
// figures (load time, frame rate, sizes) to its figures.json.
// Usage: WEB=build-web NODE_PATH=build-web/node/node_modules node --test tests/web/page_test.js
"use strict";
const test = require("node:test");
const assert = require("node:assert");
const fs = require("node:fs");
const http = require("node:http");
const os = require("node:os");
const path = require("node:path");
const puppeteer = require("puppeteer-core");

const WEB = process.env.WEB || "build-web";
const OUT = path.join(process.env.WEB_OUT || "build-web", "page-test");
fs.mkdirSync(OUT, { recursive: true });
const figures = {};

const TYPES = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm", ".data": "application/octet-stream" };

// The page's files over HTTP on 127.0.0.1 (an ephemeral port).
function serve(dir) {
  const server = http.createServer((req, res) => {
    const rel = decodeURIComponent(new URL(req.url, "http://x").pathname).replace(/^\/+/, "") || "index.html";
    const file = path.join(dir, path.normalize(rel));
    if (!file.startsWith(path.resolve(dir)) && !file.startsWith(dir)) return res.writeHead(403).end();
    fs.readFile(file, (err, data) => {
      if (err) return res.writeHead(404).end();
      res.writeHead(200, { "content-type": TYPES[path.extname(file)] || "application/octet-stream" });
      res.end(data);
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

let server, browser, base;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test.before(async () => {
  server = await serve(WEB);
  base = `http://127.0.0.1:${server.address().port}/`;
  browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: false, // the flags below say --headless themselves
    userDataDir: fs.mkdtempSync(path.join(os.tmpdir(), "weft-chromium-")),
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1600,900"],
    defaultViewport: { width: 1600, height: 900 },
  });
});

test.after(async () => {
  if (browser) await browser.close();
  if (server) server.close();
  fs.writeFileSync(path.join(OUT, "figures.json"), JSON.stringify(figures, null, 2) + "\n");
  console.log("figures:", JSON.stringify(figures));
});

// Opens the page and waits for the game's first picture and the editor.
async function open(url = base) {
  const page = await browser.newPage();
  const t0 = Date.now();
  await page.goto(url);
  await page.waitForFunction(() => window.weftPage && window.weftPage.ready, { timeout: 120000 });
  return { page, loadMs: Date.now() - t0, firstFrame: await page.evaluate(() => weftPage.firstFrame) };
}

// Runs a line of Lua in the game through its console (the backtick key),
// as a player would type it, and returns what it printed after "@@".
let asked = 0;
async function lua(page, expr) {
  const tag = `@@${++asked}`;
  const seen = await page.evaluate(() => weftPage.out.length);
  await page.focus("#canvas");
  await page.keyboard.press("Backquote");
  await sleep(100);
  await page.keyboard.type(`print("${tag}", ${expr})`, { delay: 5 });
  await page.keyboard.press("Enter");
  await sleep(100);
  await page.keyboard.press("Backquote");
  const line = await page.waitForFunction(
    (n, t) => weftPage.out.slice(n).find((l) => l.startsWith(t + "\t")), { timeout: 10000 }, seen, tag);
  return (await line.jsonValue()).slice(tag.length + 1).split("\t");
}

async function shot(page, name) {
  const file = path.join(OUT, `${name}.png`);
  await page.screenshot({ path: file });
  return file;
}

async function fps(page, ms = 3000) {
  const a = await page.evaluate(() => Module._web_drawn());
  await sleep(ms);
  const b = await page.evaluate(() => Module._web_drawn());
  return ((b - a) * 1000) / ms;
}

test("the page loads, the intro plays, Esc skips it, the keys move the thief", async () => {
  const { page, loadMs, firstFrame } = await open();
  figures.load_ms = loadMs;
  figures.first_frame_ms = Math.round(firstFrame);
  const size = (f) => fs.statSync(path.join(WEB, f)).size;
  figures.wasm_bytes = size("weft-demo.wasm");
  figures.data_bytes = size("weft-demo.data");
  figures.js_bytes = size("weft-demo.js") + size("playground.js");

  await sleep(3000);
  await shot(page, "1-intro");
  const [phase] = await lua(page, 'require("lib.game").state.phase');
  assert.strictEqual(phase, "intro", "the intro plays first");
  figures.fps_intro = Math.round(await fps(page));

  await page.focus("#canvas");
  await page.keyboard.press("Escape");
  await sleep(500);
  const [after, locked] = await lua(page, 'require("lib.game").state.phase, input_locked()');
  assert.strictEqual(after, "play", "Esc skipped the intro");
  assert.strictEqual(locked, "false", "the input is the player's again");
  await shot(page, "2-skipped");

  const [x0, y0] = (await lua(page, "player():position().x, player():position().y")).map(Number);
  await page.focus("#canvas");
  await page.keyboard.down("ArrowLeft");
  await sleep(700);
  await page.keyboard.up("ArrowLeft");
  await page.keyboard.down("ArrowUp");
  await sleep(400);
  await page.keyboard.up("ArrowUp");
  const [x1, y1] = (await lua(page, "player():position().x, player():position().y")).map(Number);
  assert.ok(x0 - x1 > 20, `the thief walked left (${x0} -> ${x1})`);
  assert.ok(y0 - y1 > 10, `the thief walked up (${y0} -> ${y1})`);
  await shot(page, "3-walked");
  figures.fps_play = Math.round(await fps(page));

  await page.focus("#canvas");
  await page.keyboard.press("F1");
  await page.keyboard.press("F2");
  await sleep(500);
  const [tasks, graph] = await lua(page, 'overlay_shown("tasks"), overlay_shown("graph")');
  assert.deepStrictEqual([tasks, graph], ["true", "true"], "F1 and F2 show the inspector and the graph");
  await shot(page, "4-overlays");
  await page.focus("#canvas");
  await page.keyboard.press("F11");
  await page.waitForFunction(() => document.fullscreenElement && document.fullscreenElement.id === "stage", { timeout: 2000 });
  await shot(page, "4b-fullscreen");
  await page.keyboard.press("F11");
  await page.waitForFunction(() => !document.fullscreenElement, { timeout: 2000 });
  figures.fps_overlays = Math.round(await fps(page));
  await page.close();

  // SDL's software renderer instead of its WebGL one (which headless
  // Chromium without a GPU draws through SwiftShader)
  const { page: soft } = await open(`${base}?renderer=software`);
  await soft.focus("#canvas");
  await soft.keyboard.press("Escape");
  await sleep(1000);
  figures.fps_play_software = Math.round(await fps(soft));
  await shot(soft, "9-software");
  await soft.close();
});

const EDIT_MARK = "@@edited";
function edited(text) {
  // The guards' brain, changed: each guard says so and stands still.
  return text.replace("function M.start(e)\n",
    `function M.start(e)\n  print("${EDIT_MARK}", e.name)\n  e:say("Edited in the page!", 30)\n  wait(math.huge)\n`);
}

async function setEditor(page, text) {
  await page.evaluate((t) => {
    const v = weftPage.view;
    v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: t } });
  }, text);
}

test("the playground's save reaches the running game; errors show and clear", async () => {
  const { page } = await open();
  await page.focus("#canvas");
  await page.keyboard.press("Escape");
  await sleep(500);
  const file = await page.evaluate(() => document.getElementById("file").value);
  assert.strictEqual(file, "ai/patrol.lua", "the editor opens on a guard's brain");
  const shipped = await page.evaluate(() => weftPage.view.state.doc.toString());
  assert.match(shipped, /function M\.start\(e\)/);

  // an edit, saved with Ctrl-S in the editor
  await setEditor(page, edited(shipped));
  const seen = await page.evaluate(() => weftPage.out.length);
  await page.click(".cm-content");
  const t0 = Date.now();
  await page.keyboard.down("Control");
  await page.keyboard.press("s");
  await page.keyboard.up("Control");
  await page.waitForFunction((n, m) => weftPage.out.slice(n).some((l) => l.startsWith(m)), { timeout: 1000 }, seen, EDIT_MARK);
  figures.edit_to_game_ms = Date.now() - t0;
  const guards = await page.evaluate((n, m) => weftPage.out.slice(n).filter((l) => l.startsWith(m)).length, seen, EDIT_MARK);
  assert.ok(guards >= 3, `every patrolling guard restarted on the new brain (${guards})`);
  await sleep(1000);
  await shot(page, "5-edited");
  // they stand still now
  const before = await lua(page, '(function() local s = "" for _, e in ipairs(entities("guard")) do s = s .. e:position().x .. "," end return s end)()');
  await sleep(1000);
  const after = await lua(page, '(function() local s = "" for _, e in ipairs(entities("guard")) do s = s .. e:position().x .. "," end return s end)()');
  figures.guards_still = before[0] === after[0];

  // a syntax error: shown with its file:line, the game keeps the last good brain
  const broken = edited(shipped).replace("function M.start(e)\n", "function M.start(e\n");
  await setEditor(page, broken);
  await page.click("#save");
  await page.waitForSelector("#errors:not([hidden])", { timeout: 2000 });
  const msg = await page.$eval("#errors", (e) => e.textContent);
  assert.match(msg, /scripts\/ai\/patrol\.lua:\d+:/, `the error names file:line: ${msg}`);
  await shot(page, "6-syntax-error");

  // fixed: the error clears
  await setEditor(page, edited(shipped));
  await page.click("#save");
  await page.waitForSelector("#errors[hidden]", { timeout: 2000 });
  await shot(page, "7-fixed");

  // share: the link carries the script; a new page opens with it applied
  await page.click("#share");
  const link = await page.evaluate(() => location.href);
  assert.match(link, /#file=ai%2Fpatrol\.lua&lua=/);
  figures.share_link_chars = link.length;
  await page.close();
  const { page: shared } = await open(link);
  const text = await shared.evaluate(() => weftPage.view.state.doc.toString());
  assert.strictEqual(text, edited(shipped), "the shared script is in the editor");
  assert.strictEqual(await shared.$eval("#errors", (e) => e.hidden), true, "no error for a shared script");
  await shared.waitForFunction((m) => weftPage.out.some((l) => l.startsWith(m)), { timeout: 5000 }, EDIT_MARK);
  await shot(shared, "8-shared");
  await shared.close();
});
