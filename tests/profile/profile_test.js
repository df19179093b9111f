// The profiler end to end: `weft run heavy.lua --profile` (three tasks
// burning 1x, 2x and 4x the processor time), its Chrome trace and its
// speedscope file, and speedscope itself (the npm package's offline build)
// drawing the file under headless Chromium. Run by `make test-profile`:
//   WEFT=build/weft OUT=build/profile NODE_PATH=build/node/node_modules node --test tests/profile/profile_test.js
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const cp = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const WEFT = process.env.WEFT || 'build/weft';
const OUT = path.resolve(process.env.OUT || 'build/profile');
const CHROMIUM = process.env.CHROMIUM || 'chromium';
fs.mkdirSync(OUT, { recursive: true });
const trace = path.join(OUT, 'heavy.json');
const scope = path.join(OUT, 'heavy.speedscope.json');

test('weft run --profile writes both files', () => {
  cp.execFileSync(WEFT, ['run', path.join(__dirname, 'heavy.lua'), '--profile', trace], { stdio: ['ignore', 'ignore', 'pipe'] });
  assert.ok(fs.existsSync(trace) && fs.existsSync(scope));
});

test('the trace: a slice per resume named by task and module, frames on their own track, wake-ups as flows', () => {
  const t = JSON.parse(fs.readFileSync(trace));
  const slices = t.traceEvents.filter((e) => e.ph === 'X' && e.cat === 'task');
  const frames = t.traceEvents.filter((e) => e.ph === 'X' && e.cat === 'frame');
  for (const k of [1, 2, 4]) {
    const mine = slices.filter((e) => e.name.startsWith(`burn${k} `));
    assert.ok(mine.length >= 60, `burn${k} resumed every frame (${mine.length} slices)`);
    assert.match(mine[0].args.module, /heavy\.lua$/);
  }
  assert.ok(frames.length >= 60);
  assert.ok(frames.every((f) => f.tid !== slices[0].tid), 'frames have a track of their own');
  const starts = t.traceEvents.filter((e) => e.ph === 's');
  const ends = t.traceEvents.filter((e) => e.ph === 'f');
  assert.ok(starts.length >= 1 && starts.every((s) => ends.some((f) => f.id === s.id && f.ts >= s.ts)));
});

test('per-task processor time keeps the 1:2:4 ratios within 20%', () => {
  const s = JSON.parse(fs.readFileSync(scope));
  const total = {};
  for (const p of s.profiles) total[p.name.split(' ')[0]] = p.weights.reduce((a, b) => a + b, 0);
  for (const k of [2, 4]) {
    const r = total[`burn${k}`] / total.burn1;
    assert.ok(Math.abs(r - k) <= 0.2 * k, `burn${k}/burn1 = ${r.toFixed(2)} (want ${k} within 20%)`);
  }
  assert.ok(s.shared.frames.some((f) => f.name === 'churn'), 'the stacks hold the function burning');
  assert.equal(s.profiles[0].name.split(' ')[0], 'burn4', 'the costliest task\'s profile first: speedscope opens it');
});

test('speedscope draws it under headless Chromium', (t) => {
  const have = cp.spawnSync(CHROMIUM, ['--version']);
  if (have.status !== 0) return t.skip(`no ${CHROMIUM}: the browser check is skipped`);
  // speedscope's own way to open a local file: a script handing it over.
  const js = path.join(OUT, 'heavy.speedscope.js');
  const data = fs.readFileSync(scope).toString('base64');
  fs.writeFileSync(js, `speedscope.loadFileFromBase64("heavy.speedscope.json", ${JSON.stringify(data)})`);
  const index = require.resolve('speedscope/dist/release/index.html');
  const url = `file://${index}#localProfilePath=${js}`;
  const png = path.join(OUT, 'speedscope.png');
  fs.rmSync(png, { force: true });
  const args = ['--headless', '--no-sandbox', '--use-angle=swiftshader', '--enable-unsafe-swiftshader',
    '--window-size=1400,900', '--virtual-time-budget=5000', `--user-data-dir=${path.join(OUT, 'chromium')}`];
  const shot = cp.spawnSync(CHROMIUM, [...args, `--screenshot=${png}`, url], { timeout: 60000 });
  assert.ok(fs.existsSync(png), `no screenshot: ${shot.stderr}`);
  assert.ok(fs.statSync(png).size > 5000, 'the screenshot is not blank');
  // On a busy machine the DOM may be dumped before speedscope has drawn
  // all of its header: up to three looks, each a fresh browser.
  let dom = '';
  // One flame graph a task with samples: the three burners, and the
  // file's own task when a sample lands in its few instructions between
  // the spawns (a stop asked during a burner's first run, inside the
  // spawn, is taken at the file's next jump or call).
  const graphs = /\(1\/[34]\)/;
  for (let i = 0; i < 3 && !(/burn4 [^<]*heavy\.lua:\d+/.test(dom) && graphs.test(dom)); i++)
    dom = cp.spawnSync(CHROMIUM, [...args, '--dump-dom', url], { timeout: 60000 }).stdout.toString();
  assert.match(dom, /burn4 [^<]*heavy\.lua:\d+/, 'the costliest task is shown first, by name');
  assert.match(dom, graphs, 'one flame graph per task: the three burners (and the file\'s own)');
});
