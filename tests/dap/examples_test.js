// The editor set-ups in examples/ as written: VS Code's launch.json (its
// launch configuration runs tasks.json's task, then attaches to
// debugServer; its attach configuration attaches to a running program)
// and nvim-dap's adapter, each driven by VS Code's own DAP client. Only
// the port changes (a free one instead of 4711). Run by `make test-dap`.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const cp = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { DebugClient } = require('@vscode/debugadapter-testsupport');

const ROOT = path.resolve(__dirname, '..', '..');
const WEFT = path.resolve(process.env.WEFT || 'build/weft');
const SCRIPT = path.join(__dirname, 'vscode.lua');
const vsdir = path.join(ROOT, 'examples', 'vscode', '.vscode');
const launch = JSON.parse(fs.readFileSync(path.join(vsdir, 'launch.json')));
const tasks = JSON.parse(fs.readFileSync(path.join(vsdir, 'tasks.json')));

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// VS Code's variables, as they are for SCRIPT open in the editor.
function expand(s, port) {
  return String(s).replace('${workspaceFolder}', ROOT).replace('${file}', SCRIPT).replace(/^4711$/, String(port));
}

// Runs a background task as VS Code does: started, and ready once a line
// of its output matches the problem matcher's endsPattern.
function runTask(task, port) {
  const command = expand(task.command, port).replace(path.join(ROOT, 'build', 'weft'), WEFT);
  const child = cp.spawn(command, task.args.map((a) => expand(a, port)), { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const ends = new RegExp(task.problemMatcher.background.endsPattern);
  return new Promise((resolve, reject) => {
    let text = '';
    const seen = (d) => {
      text += d;
      if (text.split('\n').some((l) => ends.test(l))) resolve(child);
    };
    child.stdout.on('data', seen);
    child.stderr.on('data', seen);
    child.on('exit', (code) => reject(new Error(`the task ended (${code}): ${text}`)));
  });
}

async function session(config, port, child) {
  const dc = new DebugClient('node', 'unused', config.type);
  await dc.start(port);
  await dc.initializeRequest({ adapterID: config.type, linesStartAt1: true, columnsStartAt1: true });
  const args = { ...config };
  delete args.debugServer;
  delete args.preLaunchTask;
  if (config.request === 'launch') await dc.launchRequest(args);
  else await dc.attachRequest(args);
  const bp = await dc.setBreakpointsRequest({ source: { path: SCRIPT }, breakpoints: [{ line: 9 }] });
  assert.ok(bp.body.breakpoints[0].verified);
  const stopped = dc.waitForEvent('stopped', 10000);
  await dc.configurationDoneRequest();
  const ev = await stopped;
  const frames = (await dc.stackTraceRequest({ threadId: ev.body.threadId })).body.stackFrames;
  assert.strictEqual(frames[0].line, 9);
  assert.strictEqual(frames[0].source.path, SCRIPT);
  const terminated = dc.waitForEvent('terminated', 10000);
  await dc.terminateRequest({});
  await terminated;
  await new Promise((r) => (child.exitCode !== null ? r() : child.on('exit', r)));
}

test('VS Code: "debug this file" runs the task, then attaches to debugServer', async () => {
  const config = launch.configurations.find((c) => c.request === 'launch');
  const task = tasks.tasks.find((t) => t.label === config.preLaunchTask);
  assert.ok(task, 'the preLaunchTask is in tasks.json');
  assert.strictEqual(config.debugServer, 4711);
  const port = await freePort();
  const child = await runTask(task, port);
  await session(config, port, child);
});

test('VS Code: "attach to a running game" attaches to debugServer', async () => {
  const config = launch.configurations.find((c) => c.request === 'attach');
  const port = await freePort();
  const child = await runTask({ command: WEFT, args: ['run', SCRIPT, '--debug', String(port)],
    problemMatcher: tasks.tasks[0].problemMatcher }, port);
  await session(config, port, child);
});

test('nvim-dap: a server adapter on the port weft listens on, attach', async () => {
  const src = fs.readFileSync(path.join(ROOT, 'examples', 'nvim-dap', 'weft.lua'), 'utf8');
  assert.match(src, /type = "server", host = "127\.0\.0\.1", port = 4711/);
  assert.match(src, /request = "attach"/);
  const port = await freePort();
  const child = await runTask({ command: WEFT, args: ['run', SCRIPT, '--debug', String(port)],
    problemMatcher: tasks.tasks[0].problemMatcher }, port);
  await session({ type: 'weft', request: 'attach', name: 'Attach to weft (port 4711)' }, port, child);
});
