/**
 * Several real `hookgate serve` processes on one PostgreSQL database (docs/reference.md#cluster-on-postgresql), for the
 * cluster end-to-end tests: a fresh database (test/support/pg-database.ts), N servers started through
 * test/support/server.ts (each in its own dir, on its own port, started together by default), one scripted model
 * stand-in per node (so a test can tell which node ran what: node i's model calls are `cluster.models[i].calls`), one
 * Standard Webhooks receiver shared by all nodes as the delivery channel (target `ops`), kill -9 and restart of single
 * nodes, and a clean-up that stops every process and drops the database even when the test failed half-way.
 *
 *   const c = await startCluster({ nodes: 3, model: async (call) => 'reply' });
 * const { node, result } = await c.post('/hooks/agent', { message: 'x', channel: 'webhook', to: 'ops' }); //
 * round-robin
 *   await c.kill9(1); await c.restart(1);
 *   await c.cleanup();
 */
import { createTestDatabase, type TestDatabase } from './pg-database.js';
import { webhookSecret } from './runtime-kit.js';
import { type ScriptedHandler, type ScriptedModel, startScriptedModel } from './scripted-model.js';
import { type Hookgate, type HttpResult, startHookgate } from './server.js';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.js';

export interface ClusterOptions {
  nodes?: number;
  /** The model stand-ins' handler (every node's; default: `model: <last user message>`). */
  model?: ScriptedHandler;
  /** Merged over the base config of every node (or per node, by index). */
  config?: Record<string, unknown> | ((index: number) => Record<string, unknown>);
  /** Use this database (not dropped by cleanup); default a fresh one, dropped by cleanup. */
  database?: TestDatabase;
  /** Start the nodes one after the other instead of all at once. */
  sequential?: boolean;
  env?: Record<string, string>;
}

export interface Cluster {
  db: TestDatabase;
  nodes: Hookgate[];
  /** Node i's model stand-in. */
  models: ScriptedModel[];
  receiver: WebhookReceiver;
  secret: string;
  /** POST to the next node, round-robin over the nodes that are up; says which node answered. */
  post(path: string, body?: unknown, headers?: Record<string, string>): Promise<{ node: number; result: HttpResult }>;
  /** Whether node i's process is running. */
  up(index: number): boolean;
  kill9(index: number): Promise<void>;
  restart(index: number): Promise<void>;
  cleanup(): Promise<void>;
}

/** The base config of a cluster node: its own model stand-in, the shared receiver, no periodic heartbeat. */
function baseConfig(modelUrl: string, receiver: WebhookReceiver, secret: string): Record<string, unknown> {
  return {
    logging: { level: 'info' },
    heartbeat: { every: 'off' },
    models: { providers: { scripted: { api: 'openai-chat', baseUrl: modelUrl, apiKey: 'test-key', maxAttempts: 1 } } },
    agents: { list: [{ id: 'main', default: true, model: 'scripted/m' }] },
    channels: {
      default: { channel: 'log' },
      webhook: { targets: { ops: { url: receiver.url, secret } } },
      outbox: { initialBackoffMs: 50, maxBackoffMs: 500, maxAttempts: 10 },
    },
  };
}

function mergeDeep(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const prev = out[k];
    out[k] =
      v && typeof v === 'object' && !Array.isArray(v) && prev && typeof prev === 'object' && !Array.isArray(prev)
        ? mergeDeep(prev as Record<string, unknown>, v as Record<string, unknown>)
        : v;
  }
  return out;
}

export async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  const n = opts.nodes ?? 3;
  const undo: Array<() => Promise<unknown>> = [];
  const runUndo = async () => {
    for (const u of undo.splice(0).reverse()) {
      try {
        await u();
      } catch {
        /* keep cleaning up */
      }
    }
  };
  try {
    const db = opts.database ?? (await createTestDatabase());
    if (!opts.database) undo.push(() => db.drop());
    const secret = webhookSecret();
    const receiver = await startWebhookReceiver(secret);
    undo.push(() => receiver.close());
    const models: ScriptedModel[] = [];
    for (let i = 0; i < n; i++) {
      const m = await startScriptedModel(opts.model);
      undo.push(() => m.close());
      models.push(m);
    }
    const nodeConfig = (i: number) => {
      const extra = typeof opts.config === 'function' ? opts.config(i) : (opts.config ?? {});
      return mergeDeep(baseConfig(models[i]!.url, receiver, secret), extra);
    };
    const nodes: Hookgate[] = new Array(n);
    const startOne = async (i: number) => {
      const hg = await startHookgate({ config: nodeConfig(i), database: db, ...(opts.env ? { env: opts.env } : {}) });
      nodes[i] = hg;
      // Stopped before the database is dropped (undo runs in reverse).
      undo.push(() => hg.cleanup());
    };
    if (opts.sequential) for (let i = 0; i < n; i++) await startOne(i);
    else {
      const started = await Promise.allSettled(Array.from({ length: n }, (_, i) => startOne(i)));
      const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
      if (failed) throw failed.reason;
    }

    const up = (i: number) => nodes[i]!.proc.exitCode === null && nodes[i]!.proc.signalCode === null;
    let next = 0;
    const cluster: Cluster = {
      db,
      nodes,
      models,
      receiver,
      secret,
      up,
      async post(path, body, headers) {
        for (let tries = 0; tries < n; tries++) {
          const i = next++ % n;
          if (!up(i)) continue;
          return { node: i, result: await nodes[i]!.post(path, body, headers) };
        }
        throw new Error('no node of the cluster is up');
      },
      kill9: (i) => nodes[i]!.kill9(),
      restart: (i) => nodes[i]!.restart(),
      cleanup: runUndo,
    };
    return cluster;
  } catch (err) {
    await runUndo();
    throw err;
  }
}
