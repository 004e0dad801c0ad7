/**
 * A bounded fuzz run of the real ingress: 5,000 mutated requests (test/support/fuzz.ts: random
 * bytes, truncated JSON, huge numbers, deep nesting, odd Content-Types, invalid UTF-8, odd methods and paths) and
 * raw garbage on fresh connections. No 5xx, every 4xx in the documented shape, no crash, and a valid wake is still
 * accepted afterwards. The long version (10⁶ requests): `npm run soak`.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { contractViolation, fuzzRequest, prng, rawGarbage, send, sendRaw } from '../support/fuzz.js';
import { startHookgate } from '../support/server.js';
import { RELIABILITY_CONFIG } from './config.js';

const SEED = Number(process.env.FUZZ_SEED ?? 12);
const REQUESTS = 5000;
const RAW = 200;
const CONCURRENCY = 16;

describe('reliability: ingress fuzz', { timeout: 60_000 }, () => {
  it(`${REQUESTS} mutated requests and ${RAW} raw ones: no 5xx, no crash, documented 4xx, still answering`, async (t) => {
    const hg = await startHookgate({ config: RELIABILITY_CONFIG });
    try {
      const rand = prng(SEED);
      const violations: string[] = [];
      const statuses = new Map<number, number>();
      let next = 0;
      const worker = async () => {
        while (next < REQUESTS) {
          const i = next++;
          const req = fuzzRequest(rand);
          const a = await send(hg.url, req);
          statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
          const v = contractViolation(req.method, a);
          if (v) violations.push(`#${i} (seed ${SEED}) ${req.method} ${req.path}: ${v}`);
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
      const port = Number(new URL(hg.url).port);
      for (let i = 0; i < RAW; i++) {
        const status = await sendRaw(port, rawGarbage(rand));
        if (status >= 500) violations.push(`raw #${i}: ${status}`);
      }
      t.diagnostic(`statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort((x, y) => x[0] - y[0])))}`);
      assert.deepEqual(violations.slice(0, 10), [], `${violations.length} violations`);
      assert.equal(hg.proc.exitCode, null, 'the process exited');
      assert.equal(hg.proc.signalCode, null, 'the process died');
      const r = await hg.post('/hooks/wake', { text: 'after the fuzz' });
      assert.equal(r.status, 200, r.text);
      assert.ok(!hg.lines.some((l) => /uncaught|unhandled/i.test(l)), 'an uncaught error was logged');
    } finally {
      await hg.cleanup();
    }
  });
});
