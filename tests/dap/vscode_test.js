// The debugger as VS Code drives it: @vscode/debugadapter-testsupport's
// DebugClient (the editor's own client code) over the socket of
// `weft run FILE --debug 0`. Run by `make test-dap` with node's test runner:
//   WEFT=build/weft NODE_PATH=build/node/node_modules node --test tests/dap/vscode_test.js
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const cp = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { DebugClient } = require('@vscode/debugadapter-testsupport');

const WEFT = process.env.WEFT || 'build/weft';
const SCRIPT = path.resolve(__dirname, 'vscode.lua');
const FAIL = path.resolve(__dirname, 'fail.lua');
const HELD = path.resolve(__dirname, 'held.lua');

// Starts `weft run file [args] --debug 0` and resolves with it and its
// port; child.err holds its stderr so far.
function startWeft(file, args = []) {
  return new Promise((resolve, reject) => {
    const child = cp.spawn(WEFT, ['run', file, ...args, '--debug', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.err = '';
    child.stderr.on('data', (d) => {
      err += d;
      child.err = err;
      const m = /listening on 127\.0\.0\.1:(\d+)/.exec(err);
      if (m && !child.port) {
        child.port = Number(m[1]);
        resolve(child);
      }
    });
    child.on('exit', (code) => reject(new Error(`weft ended (${code}) before listening: ${err}`)));
  });
}

function exited(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    child.on('exit', (code) => resolve(code));
  });
}

// A DebugClient attached to a fresh weft, initialized (capabilities kept).
async function attach(file, args) {
  const child = await startWeft(file, args);
  const dc = new DebugClient('node', 'unused', 'weft');
  await dc.start(child.port);
  const init = await dc.initializeRequest({ adapterID: 'weft', linesStartAt1: true, columnsStartAt1: true });
  await dc.attachRequest({});
  return { child, dc, caps: init.body };
}

async function finish(child, dc) {
  // stop() disconnects; after the program ended nothing answers it.
  if (child.exitCode === null) await Promise.race([dc.stop().catch(() => {}), sleep(2000)]);
  if (child.exitCode === null) child.kill('SIGKILL');
  await exited(child);
}

// One raw DAP request on a new socket; resolves with the first message.
function rawRequest(port, body) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let buf = '';
    const timer = setTimeout(() => { s.destroy(); reject(new Error('no answer')); }, 5000);
    s.on('connect', () => s.write(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`));
    s.on('data', (d) => {
      buf += d;
      const m = /Content-Length: (\d+)\r\n\r\n/.exec(buf);
      if (m && buf.length >= m.index + m[0].length + Number(m[1])) {
        clearTimeout(timer);
        s.destroy();
        resolve(JSON.parse(buf.substr(m.index + m[0].length, Number(m[1]))));
      }
    });
    s.on('error', reject);
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// p, or a failure once ms have passed without it: a program that hangs
// fails the test instead of blocking it.
function within(ms, p, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer to ${what} in ${ms} ms: the program hung`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

test('capabilities include supportTerminateDebuggee', async () => {
  const { child, dc, caps } = await attach(SCRIPT);
  assert.strictEqual(caps.supportTerminateDebuggee, true);
  assert.strictEqual(caps.supportsTerminateRequest, true);
  await finish(child, dc);
});

test('a breakpoint on a comment or blank line moves to the next line with code; a stop there names each', async () => {
  const { child, dc } = await attach(SCRIPT);
  const r = await dc.setBreakpointsRequest({ source: { path: SCRIPT }, breakpoints: [{ line: 7 }, { line: 8 }, { line: 40 }] });
  const [a, b, c] = r.body.breakpoints;
  assert.deepStrictEqual([a.verified, a.line, b.verified, b.line], [true, 9, true, 9]);
  assert.strictEqual(c.verified, false);
  assert.match(c.message, /no code/);
  const stopped = dc.waitForEvent('stopped', 10000);
  await dc.configurationDoneRequest();
  const ev = await stopped;
  assert.deepStrictEqual([...ev.body.hitBreakpointIds].sort((x, y) => x - y), [a.id, b.id].sort((x, y) => x - y));
  const st = await dc.stackTraceRequest({ threadId: ev.body.threadId });
  assert.strictEqual(st.body.stackFrames[0].line, 9);
  const again = dc.waitForEvent('stopped', 10000); // every stop there, not the first alone
  await dc.continueRequest({ threadId: ev.body.threadId });
  assert.strictEqual((await again).body.hitBreakpointIds.length, 2);
  await finish(child, dc);
});

test('a condition that fails says so once and never stops', async () => {
  const { child, dc } = await attach(SCRIPT);
  const outputs = [];
  let stops = 0;
  dc.on('output', (e) => outputs.push(e.body.output));
  dc.on('stopped', () => stops++);
  await dc.setBreakpointsRequest({ source: { path: SCRIPT }, breakpoints: [{ line: 6, condition: 'steps ==' }, { line: 9, condition: 'nosuch.x > 1' }] });
  await dc.configurationDoneRequest();
  await sleep(600);
  assert.strictEqual(stops, 0);
  const errs = outputs.filter((o) => /condition/.test(o));
  assert.strictEqual(errs.length, 2, errs.join(''));
  assert.match(errs.join(''), /steps ==/);
  assert.match(errs.join(''), /nosuch/);
  await finish(child, dc);
});

test('variables: Lua literals for strings, evaluateName on every one; threads and stacks', async () => {
  const { child, dc } = await attach(SCRIPT);
  await dc.setBreakpointsRequest({ source: { path: SCRIPT }, breakpoints: [{ line: 9 }] });
  const stopped = dc.waitForEvent('stopped', 10000);
  await dc.configurationDoneRequest();
  const ev = await stopped;
  const threads = (await dc.threadsRequest()).body.threads;
  const me = threads.find((t) => t.id === ev.body.threadId);
  assert.ok(me, 'the stopped thread is listed');
  assert.doesNotMatch(me.name, /running/);
  await assert.rejects(dc.stackTraceRequest({ threadId: 99999 }));
  const frames = (await dc.stackTraceRequest({ threadId: ev.body.threadId })).body.stackFrames;
  const outer = frames.find((f) => f.name === 'main chunk');
  const scopes = (await dc.scopesRequest({ frameId: outer.id })).body.scopes;
  const locals = (await dc.variablesRequest({ variablesReference: scopes[0].variablesReference })).body.variables;
  for (const v of locals) assert.ok(v.evaluateName, `${v.name} has an evaluateName`);
  const title = locals.find((v) => v.name === 'title');
  assert.strictEqual(title.value, '"Moon \\"Idol\\"\\nat night"');
  const box = locals.find((v) => v.name === 'box');
  const fields = (await dc.variablesRequest({ variablesReference: box.variablesReference })).body.variables;
  const names = Object.fromEntries(fields.map((f) => [f.name, f.evaluateName]));
  assert.strictEqual(names.name, 'box.name');
  assert.strictEqual(names['odd key'], 'box["odd key"]');
  const list = fields.find((f) => f.name === 'list');
  const items = (await dc.variablesRequest({ variablesReference: list.variablesReference })).body.variables;
  assert.deepStrictEqual(items.map((i) => i.evaluateName), ['box.list[1]', 'box.list[2]']);
  for (const f of fields) {
    const r = await dc.evaluateRequest({ expression: f.evaluateName, frameId: outer.id, context: 'watch' });
    assert.strictEqual(r.body.result, f.value, f.evaluateName);
  }
  await finish(child, dc);
});

test('terminate ends the program with a terminated event, no further stop', async () => {
  const { child, dc } = await attach(SCRIPT);
  await dc.setBreakpointsRequest({ source: { path: SCRIPT }, breakpoints: [{ line: 6 }] });
  const stopped = dc.waitForEvent('stopped', 10000);
  await dc.configurationDoneRequest();
  await stopped;
  let stops = 0;
  dc.on('stopped', () => stops++);
  const terminated = dc.waitForEvent('terminated', 10000);
  await dc.terminateRequest({});
  await terminated;
  assert.strictEqual(stops, 0);
  await exited(child);
  await finish(child, dc);
});

test('a second client is answered at once with an error', async () => {
  const { child, dc } = await attach(SCRIPT);
  await dc.configurationDoneRequest();
  const r = await rawRequest(child.port, JSON.stringify({ seq: 1, type: 'request', command: 'initialize', arguments: { adapterID: 'weft' } }));
  assert.strictEqual(r.success, false);
  assert.strictEqual(r.request_seq, 1);
  assert.match(r.message, /another client is attached/);
  assert.ok((await dc.threadsRequest()).success, 'the first client goes on');
  await finish(child, dc);
});

// Everything a raw connection is told until it closes (at most ms).
function rawSession(port, bytes, ms) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let buf = '';
    const timer = setTimeout(() => { s.destroy(); resolve({ closed: false, text: buf }); }, ms);
    s.on('connect', () => s.write(bytes));
    s.on('data', (d) => { buf += d; });
    s.on('close', () => { clearTimeout(timer); resolve({ closed: true, text: buf }); });
    s.on('error', reject);
  });
}

test('a first message that is not JSON closes the connection, answered by no response', async () => {
  const child = await startWeft(SCRIPT);
  try {
    const body = '{"seq": 1, "type": "req';
    const r = await rawSession(child.port, `Content-Length: ${body.length}\r\n\r\n${body}`, 5000);
    assert.deepStrictEqual(r, { closed: true, text: '' });
    const init = await rawRequest(child.port, JSON.stringify({ seq: 1, type: 'request', command: 'initialize', arguments: { adapterID: 'weft' } }));
    assert.strictEqual(init.success, true, 'the next client is taken');
  } finally {
    child.kill('SIGKILL');
    await exited(child);
  }
});

test('after initialize, a message that is not JSON is said as stderr output, not a response', async () => {
  const { child, dc } = await attach(SCRIPT);
  const unknown = []; // responses to no request the client sent, as VS Code would log them
  const dispatch = dc.dispatch.bind(dc);
  dc.dispatch = (body) => {
    const m = JSON.parse(body);
    if (m.type === 'response' && !dc.pendingRequests.has(m.request_seq)) unknown.push(m);
    dispatch(body);
  };
  const said = dc.assertOutput('stderr', 'weft: a message from the client (23 bytes) was ignored: it is not JSON', 5000);
  const body = '{"seq": 1, "type": "req';
  try {
    dc._socket.write(`Content-Length: ${body.length}\r\n\r\n${body}`); // on the client's own connection
    await within(5000, said, 'the not-JSON message');
    assert.ok((await dc.threadsRequest()).success, 'the session goes on');
    assert.deepStrictEqual(unknown, []);
  } finally {
    await finish(child, dc);
  }
});

test('before initialize every request is refused, evaluate too', async () => {
  const child = await startWeft(SCRIPT);
  try {
    const r = await rawRequest(child.port, JSON.stringify({ seq: 1, type: 'request', command: 'evaluate', arguments: { expression: 'os.exit(3)' } }));
    assert.strictEqual(r.success, false);
    assert.strictEqual(r.command, 'evaluate');
    assert.match(r.message, /initialize first/);
    assert.strictEqual(child.exitCode, null, 'the program goes on');
  } finally {
    child.kill('SIGKILL');
    await exited(child);
  }
});

test('a logpoint says where it is', async () => {
  const { child, dc } = await attach(SCRIPT);
  await dc.setBreakpointsRequest({ source: { path: SCRIPT }, breakpoints: [{ line: 9, logMessage: 'steps={steps}' }] });
  const out = dc.assertOutput('console', 'steps=', 10000);
  await dc.configurationDoneRequest();
  const ev = await out;
  assert.strictEqual(ev.body.source.path, SCRIPT);
  assert.strictEqual(ev.body.line, 9);
  await finish(child, dc);
});

test('exceptionInfo has details', async () => {
  const { child, dc } = await attach(FAIL);
  await dc.setExceptionBreakpointsRequest({ filters: ['uncaught'] });
  const stopped = dc.waitForEvent('stopped', 10000);
  await dc.configurationDoneRequest();
  const ev = await stopped;
  assert.strictEqual(ev.body.reason, 'exception');
  const info = (await dc.exceptionInfoRequest({ threadId: ev.body.threadId })).body;
  assert.match(info.details.message, /door jammed/);
  assert.match(info.details.stackTrace, /fail\.lua/);
  await finish(child, dc);
});

// Stopped at a breakpoint, 200 rounds of: a runaway evaluated in the
// console (stopped in its own slice, every time), an ordinary one (the
// program still answers), continue. All the stops are in one stretch of
// the task, which then works 20 ms: it finishes, and its worst frame's
// script time is about that work, as the time held stopped (a second of
// evaluations) is not its own. Now and then the program stays stopped
// long enough for the watchdog to nap first.
const RUNAWAY = '(function() while true do end end)()';
async function runawayRounds(args) {
  const ROUNDS = 200;
  const { child, dc } = await attach(HELD, [String(ROUNDS), ...args]);
  const out = [];
  dc.on('output', (e) => out.push(e.body.output));
  try {
    await dc.setBreakpointsRequest({ source: { path: HELD }, breakpoints: [{ line: 9 }] });
    let stopped = dc.waitForEvent('stopped', 10000);
    await dc.configurationDoneRequest();
    for (let round = 1; round <= ROUNDS; round++) {
      const ev = await stopped;
      const what = `round ${round}`;
      const top = (await within(5000, dc.stackTraceRequest({ threadId: ev.body.threadId }), `stackTrace, ${what}`)).body.stackFrames[0];
      assert.strictEqual(top.line, 9, what);
      if (round % 50 === 25) await sleep(150); // long enough for the watchdog to nap
      await assert.rejects(within(5000, dc.evaluateRequest({ expression: RUNAWAY, context: 'repl', frameId: top.id }), `the runaway, ${what}`),
        /evaluation ran too long/, what);
      const n = await within(5000, dc.evaluateRequest({ expression: 'n', context: 'repl', frameId: top.id }), `n, ${what}`);
      assert.strictEqual(n.body.result, String((round * (round - 1)) / 2), what);
      if (round < ROUNDS) stopped = dc.waitForEvent('stopped', 5000);
      await within(5000, dc.continueRequest({ threadId: ev.body.threadId }), `continue, ${what}`);
    }
    const code = await within(10000, exited(child), 'the end of the program');
    assert.strictEqual(code, 0, child.err);
    assert.doesNotMatch(child.err, /too long/);
    const worst = /rounds\t20100\tworst frame \(ms\)\t([\d.]+)/.exec(out.join(''));
    assert.ok(worst, out.join(''));
    assert.ok(Number(worst[1]) < 500, `its worst frame took ${worst[1]} ms of script time`);
  } finally {
    await finish(child, dc);
  }
}

test('a runaway evaluation at a breakpoint is stopped every time, 200 times, profiler off', { timeout: 60000 }, async () => {
  await runawayRounds([]); // before the first frame: in the file's first run
});

test('a runaway evaluation at a breakpoint is stopped every time, 200 times, profiler on', { timeout: 60000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-dap-'));
  try {
    await runawayRounds(['frame', '--profile', path.join(dir, 'p.json')]); // inside a step
    // The task's samples weigh its 20 ms of work, not the evaluations' second.
    const prof = JSON.parse(fs.readFileSync(path.join(dir, 'p.speedscope.json'), 'utf8'));
    const mine = prof.profiles.find((p) => p.name.endsWith('held.lua'));
    assert.ok(mine && mine.samples.length > 0, 'the task was sampled');
    assert.ok(mine.endValue < 500000, `the task's samples weigh ${mine.endValue} us`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
