/** The admin API's repairs are recorded in the audit trail (actor "admin"), and only when they happened. */
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { describe, it } from 'node:test';
import { apiRoutes } from '../../src/admin/api.js';
import type { AdminRoute } from '../../src/admin/route.js';
import type { Delivery, Store } from '../../src/store/types.js';

function fakeRes(): ServerResponse & { status?: number; body?: string } {
  const res = {
    writeHead(status: number) {
      res.status = status;
      return res;
    },
    end(text: string) {
      res.body = text;
    },
  } as unknown as ServerResponse & { status?: number; body?: string };
  return res;
}

function route(routes: AdminRoute[], method: string, path: string): AdminRoute {
  const r = routes.find((x) => x.method === method && x.path === path);
  assert.ok(r, path);
  return r;
}

describe('admin API: repairs in the audit trail', () => {
  it('a dead delivery retried is one admin.retry record with its id; one that is not dead is refused and not recorded', async () => {
    const deliveries = new Map<string, Partial<Delivery>>([
      ['d1', { id: 'd1', state: 'dead' }],
      ['d2', { id: 'd2', state: 'delivered' }],
    ]);
    const store = {
      getDelivery: async (id: string) => deliveries.get(id),
      retryDelivery: async (id: string) => ({ ...deliveries.get(id), state: 'pending' }),
    } as unknown as Store;
    const records: unknown[] = [];
    const routes = apiRoutes({
      store,
      signals: { runsQueued() {}, deliveriesQueued() {} },
      audit: { record: (...a: unknown[]) => (records.push(a), undefined as never) },
    });
    const retry = route(routes, 'POST', '/api/v1/deliveries/:id/retry');
    const res = fakeRes();
    await retry.handle({ req: {} as never, res, params: { id: 'd1' }, query: new URLSearchParams() });
    assert.equal(res.status, 200);
    assert.deepEqual(records, [['admin.retry', 'admin', { deliveryId: 'd1', from: 'failed' }]]);
    await assert.rejects(
      Promise.resolve(
        retry.handle({ req: {} as never, res: fakeRes(), params: { id: 'd2' }, query: new URLSearchParams() }),
      ),
    );
    assert.equal(records.length, 1);
  });
});
