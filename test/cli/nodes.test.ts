/**
 * `hookgate nodes` lists the node registry (SQLite here: the store of one node at a time, and the rows a
 * kill -9 left), live or gone by NODE_LIVE_MS; --json for scripts; never creates a store.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ago, nodeView } from '../../src/cli/nodes-command.js';
import { NODE_LIVE_MS, type NodeInfo } from '../../src/store/types.js';
import { runCli } from '../support/server.js';
import { storeDirWith } from '../support/store-at.js';
import { removeDir, tempDir } from '../support/temp-dir.js';

const node = (id: string, lastSeenAt: number): NodeInfo => ({
  id,
  host: 'box-1',
  pid: 4242,
  version: '0.1.0',
  url: 'http://127.0.0.1:18789/hooks',
  startedAt: lastSeenAt - 60_000,
  lastSeenAt,
});

describe('cli: hookgate nodes (SQLite)', () => {
  let dir: string;
  const now = Date.now();
  before(async () => {
    dir = await storeDirWith(async (s) => {
      await s.registerNode(node('box-1:4242:live', now));
      await s.registerNode(node('box-1:4100:killed', now - NODE_LIVE_MS - 5_000));
    });
  });
  after(() => removeDir(dir));

  it('--json: every registered node, most recently seen first, live or gone', async () => {
    const r = await runCli(['nodes', '--json'], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    const list = JSON.parse(r.stdout) as Array<NodeInfo & { state: string }>;
    assert.deepEqual(
      list.map((n) => [n.id, n.state]),
      [
        ['box-1:4242:live', 'live'],
        ['box-1:4100:killed', 'gone'],
      ],
    );
    assert.deepEqual(list[0], { ...node('box-1:4242:live', now), state: 'live' });
  });

  it('a table for people: id, state, host, pid, version, url, started, last seen (relative), and a count', async () => {
    const r = await runCli(['nodes'], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.match(lines[0]!, /^ID\s+STATE\s+HOST\s+PID\s+VERSION\s+URL\s+STARTED\s+LASTSEEN$/);
    assert.match(
      lines[1]!,
      /^box-1:4242:live\s+live\s+box-1\s+4242\s+0\.1\.0\s+http:\/\/127\.0\.0\.1:18789\/hooks\s+\S+ \S+Z\s+\d+ s ago$/,
    );
    // Its age: NODE_LIVE_MS + 5 s when the test started, plus however long the CLI took (seconds on a loaded machine).
    const age = Number(/^box-1:4100:killed\s+gone\s.*\s(\d+) s ago$/.exec(lines[2]!)?.[1]);
    const least = Math.floor((NODE_LIVE_MS + 5_000) / 1000);
    assert.ok(
      age >= least && age <= least + Math.ceil((Date.now() - now) / 1000),
      `${lines[2]}: expected ${least} s ago or a little more`,
    );
    assert.equal(lines.at(-1), '1 live, 1 gone');
  });

  it('never creates a store: where there is none, it says what it looked for', async () => {
    const empty = tempDir();
    try {
      const r = await runCli(['nodes'], { cwd: empty });
      assert.equal(r.code, 1);
      assert.match(r.stderr, /nothing to read: no config file and no store of the embedded default/);
      assert.equal(existsSync(join(empty, 'data')), false);
    } finally {
      removeDir(empty);
    }
  });

  it('live up to NODE_LIVE_MS since last seen, gone after; relative times', () => {
    assert.equal(nodeView(node('a', 1000), 1000 + NODE_LIVE_MS).state, 'live');
    assert.equal(nodeView(node('a', 1000), 1001 + NODE_LIVE_MS).state, 'gone');
    assert.deepEqual(
      [ago(4_000), ago(300_000), ago(3 * 3_600_000), ago(3 * 86_400_000)],
      ['4 s ago', '5 min ago', '3 h ago', '3 d ago'],
    );
  });
});

describe('cli: hookgate nodes prune (SQLite)', () => {
  let dir: string;
  const now = Date.now();
  before(async () => {
    dir = await storeDirWith(async (s) => {
      await s.registerNode(node('box-1:1:live', now));
      await s.registerNode(node('box-1:2:gone-a-minute', now - 60_000));
      await s.registerNode(node('box-1:3:gone-two-days', now - 2 * 86_400_000));
    });
  });
  after(() => removeDir(dir));
  const ids = async () =>
    (JSON.parse((await runCli(['nodes', '--json'], { cwd: dir })).stdout) as NodeInfo[]).map((n) => n.id);

  it('--dry-run lists the nodes gone for longer than the default (24h) and removes nothing', async () => {
    const r = await runCli(['nodes', 'prune', '--dry-run'], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^box-1:3:gone-two-days\s+box-1\s+last seen 2 d ago$/m);
    assert.match(r.stdout, /^would remove 1 node not seen for 24h$/m);
    assert.equal((await ids()).length, 3);
  });

  it('removes the rows gone for longer than --older-than, never a live one, and audits it; under 30 s is refused', async () => {
    const tooShort = await runCli(['nodes', 'prune', '--older-than', '10s'], { cwd: dir });
    assert.equal(tooShort.code, 1);
    assert.match(tooShort.stderr, /--older-than must be at least 30 s: a node seen within that is live/);
    const bad = await runCli(['nodes', 'prune', '--older-than', 'soon'], { cwd: dir });
    assert.match(bad.stderr, /--older-than "soon": expected a duration/);

    const r = await runCli(['nodes', 'prune', '--json'], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(
      (JSON.parse(r.stdout) as NodeInfo[]).map((n) => n.id),
      ['box-1:3:gone-two-days'],
    );
    assert.deepEqual(await ids(), ['box-1:1:live', 'box-1:2:gone-a-minute']);

    const shorter = await runCli(['nodes', 'prune', '--older-than', '30s'], { cwd: dir });
    assert.equal(shorter.code, 0, shorter.stderr);
    assert.match(shorter.stdout, /^removed 1 node not seen for 30s$/m);
    assert.deepEqual(await ids(), ['box-1:1:live'], 'the live node stays');

    const audit = await runCli(['audit', '--kind', 'nodes.pruned', '--json'], { cwd: dir });
    assert.equal(audit.code, 0, audit.stderr);
    const records = JSON.parse(audit.stdout) as Array<{
      actor: string;
      detail: { nodes: string[]; olderThan: string };
    }>;
    assert.deepEqual(
      records
        .map((a) => [a.actor, a.detail.nodes, a.detail.olderThan])
        .sort((x, y) => String(x[2]).localeCompare(String(y[2]))),
      [
        ['cli', ['box-1:3:gone-two-days'], '24h'],
        ['cli', ['box-1:2:gone-a-minute'], '30s'],
      ],
    );
  });
});
