import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fromRoot } from '../support/paths.js';

type Server = {
  url: string;
  child: import('node:child_process').ChildProcess;
  db: { close(): void };
  backlog(): number | Promise<number>;
};
const pinned = (await import(fromRoot('bench/pinned.mjs'))) as {
  startHookgate: (o: object, dir: string) => Promise<Server>;
  startContractFloor: (o: object, dir: string) => Promise<Server>;
  TOKEN: string;
};

interface Probe {
  name: string;
  path: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

/** The answer's status, its code (refusals) and the names of its fields: what a sender can branch on. */
async function ask(base: string, p: Probe): Promise<{ status: number; code?: string; keys: string[] }> {
  const res = await fetch(`${base}${p.path}`, {
    method: p.method ?? 'POST',
    headers: { authorization: `Bearer ${pinned.TOKEN}`, 'content-type': 'application/json', ...p.headers },
    body: p.method === 'GET' ? undefined : p.body,
  });
  const text = await res.text();
  const json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  return { status: res.status, code: json.code as string | undefined, keys: Object.keys(json).sort() };
}

const probes: Probe[] = [
  { name: 'a wake', path: '/hooks/wake', body: '{"text":"contract floor probe","mode":"next-heartbeat"}' },
  { name: 'the same text again', path: '/hooks/wake', body: '{"text":"contract floor probe","mode":"next-heartbeat"}' },
  { name: 'a BOM before the JSON', path: '/hooks/wake', body: '\ufeff{"text":"after a BOM","mode":"next-heartbeat"}' },
  { name: 'a wrong token', path: '/hooks/wake', headers: { authorization: 'Bearer wrong' }, body: '{"text":"x"}' },
  { name: 'the token in the query', path: '/hooks/wake?token=x', body: '{"text":"x"}' },
  { name: 'GET', path: '/hooks/wake', method: 'GET' },
  { name: 'a blank text', path: '/hooks/wake', body: '{"text":"  "}' },
  { name: 'an empty body', path: '/hooks/wake', body: '' },
  { name: 'an unknown mode', path: '/hooks/wake', body: '{"text":"x","mode":"later"}' },
  { name: 'a JSON array', path: '/hooks/wake', body: '[1]' },
  { name: 'not JSON', path: '/hooks/wake', body: '{text' },
  { name: 'an unknown hook', path: '/hooks/nothing-here', body: '{}' },
  { name: 'an agent request', path: '/hooks/agent', body: '{"message":"contract floor run","name":"Probe"}' },
  { name: 'a session key', path: '/hooks/agent', body: '{"message":"x","sessionKey":"hook:mine"}' },
  { name: 'an unknown model', path: '/hooks/agent', body: '{"message":"x","model":"nowhere/none"}' },
  { name: 'a blank message', path: '/hooks/agent', body: '{"message":""}' },
  { name: 'a body over the limit', path: '/hooks/agent', body: Buffer.alloc(300_000, 'a') },
];

/** The delivered lines of agent runs (a heartbeat's reply, with `runId` null, would go to the same file). */
const runLines = (file: string) =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l.runId !== null)
    : [];

describe('bench/contract-floor-server.mjs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-contract-floor-test-'));
  const o = { admin: false, serverCpu: null, nodeArgs: [] };
  let hookgate: Server;
  let floor: Server;
  before(async () => {
    [hookgate, floor] = await Promise.all([pinned.startHookgate(o, dir), pinned.startContractFloor(o, dir)]);
  });
  after(async () => {
    for (const s of [hookgate, floor]) {
      s?.db.close();
      s?.child.kill('SIGTERM');
    }
    rmSync(dir, { recursive: true, force: true });
  });

  // What separates the two servers in the bench must be their code: the young generation and malloc's arenas alone
  // move a server's rate by a tenth (docs/performance.md, "The contract floor").
  it('runs with the node flags and the environment hookgate runs with', () => {
    const launch = (s: Server) => {
      const argv = readFileSync(`/proc/${s.child.pid}/cmdline`, 'utf8').split('\0');
      const script = argv.findIndex((a) => a.endsWith('.js') || a.endsWith('.mjs'));
      const env = readFileSync(`/proc/${s.child.pid}/environ`, 'utf8').split('\0');
      return { flags: argv.slice(1, script), arenas: env.find((e) => e.startsWith('MALLOC_ARENA_MAX=')) };
    };
    const [h, f] = [launch(hookgate), launch(floor)];
    assert.ok(h.flags.includes('--max-semi-space-size=4'), `hookgate's flags: ${h.flags.join(' ')}`);
    assert.deepEqual(f, h);
  });

  // The floor stands for the least an implementation of hookgate's contract does: it must answer what hookgate
  // answers, or the bench would compare hookgate with a server that does less than the contract asks.
  it('answers every probe with hookgate’s status, code and fields', async () => {
    for (const p of probes) {
      const [h, f] = [await ask(hookgate.url, p), await ask(floor.url, p)];
      assert.deepEqual(f, h, p.name);
    }
  });

  it('runs an agent request to a delivered line with hookgate’s fields', async () => {
    const hookgateLog = join(dir, 'deliveries.jsonl');
    const floorLog = join(dir, 'contract.jsonl');
    for (let t = Date.now(); runLines(hookgateLog).length === 0 || runLines(floorLog).length === 0; ) {
      assert.ok(Date.now() - t < 20_000, 'both delivered within 20 s');
      await new Promise((r) => setTimeout(r, 50));
    }
    const [h, f] = [runLines(hookgateLog)[0], runLines(floorLog)[0]];
    assert.deepEqual(Object.keys(f ?? {}).sort(), Object.keys(h ?? {}).sort());
    assert.equal(f?.text, h?.text);
    assert.equal(f?.sessionKey, `hook:${String(f?.runId)}`);
    assert.equal(await floor.backlog(), 0);
  });

  // `--target contract-agent-accept` counts the accept alone: nothing of a run may run beside it.
  it('holds its runs with CONTRACT_HOLD_RUNS=1: committed, never executed', async () => {
    const heldDir = mkdtempSync(join(tmpdir(), 'hookgate-contract-floor-held-'));
    process.env.CONTRACT_HOLD_RUNS = '1';
    let held: Server | undefined;
    try {
      held = await pinned.startContractFloor(o, heldDir);
      delete process.env.CONTRACT_HOLD_RUNS;
      for (let i = 0; i < 3; i++) {
        const p = { name: 'held', path: '/hooks/agent', body: `{"message":"held ${i}"}` };
        assert.deepEqual(await ask(held.url, p), { status: 200, code: undefined, keys: ['ok', 'runId'] });
      }
      await new Promise((r) => setTimeout(r, 500)); // a run is executed on the next turn when not held
      assert.equal(await held.backlog(), 3);
      assert.deepEqual(runLines(join(heldDir, 'contract.jsonl')), []);
    } finally {
      delete process.env.CONTRACT_HOLD_RUNS;
      held?.db.close();
      held?.child.kill('SIGTERM');
      rmSync(heldDir, { recursive: true, force: true });
    }
  });
});
