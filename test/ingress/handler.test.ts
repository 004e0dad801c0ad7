/**
 * The handler in-process, where the e2e tests cannot reach: a store that really fails (its database locked by
 * another connection) must give 503 and never a 2xx.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import pino from 'pino';
import { validateConfig } from '../../src/config/load.js';
import { PENDING } from '../../src/hooks/completion.js';
import { buildHooksContext } from '../../src/hooks/context.js';
import { createHandler, IngressState } from '../../src/ingress/handler.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { tempDir } from '../support/temp-dir.js';
import { TOKEN } from '../support/token.js';

describe('handler: store failures', () => {
  let dir: string;
  let store: SqliteStore;
  let server: Server;
  let url: string;
  const signals = { heartbeats: 0, runs: 0 };

  before(async () => {
    dir = tempDir('hookgate-handler-');
    const config = validateConfig({ hooks: { enabled: true, token: TOKEN } }, undefined, dir, { env: {} });
    store = new SqliteStore({ path: join(dir, 'h.db'), writer: 'thread', busyTimeoutMs: 100 });
    const handler = createHandler(new IngressState(buildHooksContext(config, 1)), {
      store,
      signals: { heartbeatRequested: () => void signals.heartbeats++, runsQueued: () => void signals.runs++ },
      completions: { wait: async () => PENDING },
      logger: pino({ level: 'silent' }),
    });
    server = createServer((req, res) => void handler(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.close();
    await store.close();
  });

  const post = (path: string, body: unknown) =>
    fetch(`${url}/hooks/${path}`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body: JSON.stringify(body) });

  it('answers 503 unavailable while the database is locked, and accepts again after', async () => {
    const ok = await post('wake', { text: 'before lock' });
    assert.equal(ok.status, 200);
    assert.equal(signals.heartbeats, 1, 'a now-wake is signalled after the commit');

    const locker = new Database(join(dir, 'h.db'));
    locker.prepare('BEGIN IMMEDIATE').run();
    try {
      const [w, a] = await Promise.all([post('wake', { text: 'during lock' }), post('agent', { message: 'during lock' })]);
      for (const r of [w, a]) {
        assert.equal(r.status, 503);
        const body = (await r.json()) as Record<string, unknown>;
        assert.equal(body.code, 'unavailable');
        assert.equal(body.ok, false);
      }
      assert.equal(signals.runs, 0, 'nothing signalled for refused work');
    } finally {
      locker.prepare('ROLLBACK').run();
      locker.close();
    }
    const again = await post('agent', { message: 'after lock' });
    assert.equal(again.status, 200);
    assert.equal(signals.runs, 1);
    const main = await store.getSession('main');
    assert.deepEqual(main?.pending.map((e) => e.text), ['before lock']);
  });
});
