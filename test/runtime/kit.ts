/**
 * In-process runtime for the runtime unit tests: an in-memory SQLite store, the scripted model behind the real
 * openai-chat provider, a validated config, and a logger whose lines the test can read. No server, no CLI.
 */
import { Writable } from 'node:stream';
import type { ChannelRegistry } from '../../src/channels/registry.js';
import type { Channel } from '../../src/channels/types.js';
import { validateConfig } from '../../src/config/load.js';
import { ModelCatalog } from '../../src/config/model-catalog.js';
import { defaultAgentId } from '../../src/config/lookup.js';
import { createLogger } from '../../src/log.js';
import { closeProviders, createProviders } from '../../src/providers/registry.js';
import type { RuntimeDeps, RuntimeEnv } from '../../src/runtime/env.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { NewRun, NewSystemEvent } from '../../src/store/types.js';
import { command, event, run } from '../store/contract.js';
import {
  SCRIPTED_API_KEY,
  type ScriptedHandler,
  type ScriptedModel,
  startScriptedModel,
} from '../support/scripted-model.js';

export type LogLine = Record<string, unknown> & { level: number; msg: string };

export interface RuntimeKit {
  store: SqliteStore;
  model: ScriptedModel;
  /** What the runtime reads; `env.config` may be replaced by a test (a reload). */
  env: RuntimeEnv;
  deps: RuntimeDeps;
  logs: LogLine[];
  /** Log lines whose message is `msg`. */
  logged(msg: string): LogLine[];
  /** Queue one run (the contract suite's defaults: session `hook:<uuid>`, deliver, channel `last`). */
  queueRun(over?: Partial<NewRun>): Promise<string>;
  /** Add pending system events to the main session. */
  addEvents(...texts: string[]): Promise<NewSystemEvent[]>;
  close(): Promise<void>;
}

/**
 * `config` is merged one level deep over the base: the agent `main` on `local/main-model` (the scripted model),
 * no periodic heartbeat, replies to the `log` channel by default.
 */
export async function startRuntimeKit(
  opts: { config?: Record<string, Record<string, unknown>>; handler?: ScriptedHandler } = {},
): Promise<RuntimeKit> {
  const model = await startScriptedModel(opts.handler ?? ((c) => `reply to ${c.lastUser.length} chars`));
  const base: Record<string, Record<string, unknown>> = {
    models: {
      providers: { local: { api: 'openai-chat', baseUrl: model.url, apiKey: SCRIPTED_API_KEY, maxAttempts: 1 } },
    },
    agents: { list: [{ id: 'main', default: true, model: 'local/main-model' }] },
    channels: { default: { channel: 'log' } },
    heartbeat: { every: 0 },
  };
  for (const [key, value] of Object.entries(opts.config ?? {})) base[key] = { ...base[key], ...value };
  const config = validateConfig(base, undefined, process.cwd());
  const env: RuntimeEnv = {
    config,
    catalog: new ModelCatalog(config),
    providers: createProviders(config.models.providers),
    // The run worker and the heartbeat never send: only the outbox uses channels.
    channels: undefined as unknown as ChannelRegistry,
    defaultAgentId: defaultAgentId(config),
  };
  const store = new SqliteStore({ path: ':memory:', writer: 'inline' });
  const logs: LogLine[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) logs.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  const logger = createLogger('debug', { destination, pretty: false });
  const deps: RuntimeDeps = { store, logger, owner: 'test-owner', env: () => env };
  return {
    store,
    model,
    env,
    deps,
    logs,
    logged: (msg) => logs.filter((l) => l.msg === msg),
    async queueRun(over = {}) {
      const r = run({ createdAt: Date.now(), ...over });
      await store.accept(command({ runs: [r] }));
      return r.id;
    },
    async addEvents(...texts) {
      const events = texts.map((text, i) => event({ text, createdAt: Date.now() + i }));
      await store.addEvents(events);
      return events;
    },
    async close() {
      await model.close();
      await closeProviders(env.providers);
      await store.close();
    },
  };
}

/** `env` with a channel registry of the one `channel` (by its id): what the outbox of a runtime test sends through. */
export function envWithChannel(env: RuntimeEnv, channel: Channel): RuntimeEnv {
  const channels = {
    get: (id: string) => (id === channel.id ? channel : undefined),
    ids: () => [channel.id],
    normalize: (n: string) => n,
    close: async () => {},
  } as unknown as ChannelRegistry;
  return { ...env, channels };
}
