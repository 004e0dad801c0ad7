#!/usr/bin/env node
import { existsSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Command, Option } from 'commander';
import { newToken } from '../config/defaults.js';
import { findConfigFile } from '../config/load.js';
import { DELIVERY_STATES, RUN_STATES, SESSION_MODES, WAKE_MODES } from '../enums.js';
import { ConfigError } from '../errors.js';
import { configuredChannelIds, defaultAgentId, normalizeChannelName } from '../config/lookup.js';
import type { DeliveryState, RunState } from '../store/types.js';
import { logSafe } from '../text-safe.js';
import { cliConfig, serviceEndpoint, withStore } from './context.js';
import { printJson, table, time } from './format.js';
import { starterConfig } from './starter-config.js';

const program = new Command('hookgate')
  .description('Self-hosted webhook ingress for AI agents')
  .version('0.1.0')
  .showHelpAfterError()
  .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : 1));

/** After a forced stop, the longest wait for the runs to be given back and the store closed. */
const FORCED_EXIT_MS = 5000;

const configOption = () => new Option('-c, --config <file>', 'config file (default: $HOOKGATE_CONFIG, ./hookgate.json5, else the embedded default)');
const urlOption = () => new Option('--url <url>', 'the service\'s base URL (default: from gateway.bind and gateway.port)');

program
  .command('serve')
  .description('run the service')
  .addOption(configOption())
  .action(async (opts: { config?: string }) => {
    // Loaded here only: the commands that read the store never load the server (ingress, runtime, channels).
    const { startApp } = await import('../app.js');
    const app = await startApp({ configFile: findConfigFile(opts.config), watchConfig: true });
    // The first SIGTERM/SIGINT stops gracefully; a second one (Ctrl-C again) forces it: see docs/operations.md.
    let signals = 0;
    // Not while stopping: a reload would build a generation (channels, connections) that nothing disposes.
    process.on('SIGHUP', () => signals === 0 && void app.reload());
    const onSignal = () => {
      if (++signals > 1) {
        app.force();
        // Should closing the store hang, exit anyway: the 'exit' handler still kills the agents' process groups.
        setTimeout(() => process.exit(1), FORCED_EXIT_MS).unref();
        return;
      }
      const hint = process.stdin.isTTY || process.stdout.isTTY ? 'press Ctrl-C again to stop at once' : undefined;
      app.close({ hint }).then(() => process.exit(0), () => process.exit(1));
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });

program
  .command('init')
  .description('write a commented starter config with a fresh random token')
  .argument('[file]', 'where to write it', 'hookgate.json5')
  .option('-f, --force', 'overwrite an existing file')
  .action((file: string, opts: { force?: boolean }) => {
    const path = resolve(file);
    if (existsSync(path) && !opts.force) fail(`${path} exists; use --force to overwrite`);
    writeFileSync(path, starterConfig(newToken()), { mode: 0o600 });
    process.stdout.write(`wrote ${path}\nstart it with: hookgate serve --config ${file}\n`);
  });

const config = program.command('config').description('config file tools');
config
  .command('check')
  .description('validate the config; exit 1 listing every problem by key path')
  .addOption(configOption())
  .action((opts: { config?: string }) => {
    const c = cliConfig(opts.config);
    for (const w of c.warnings) process.stdout.write(`warning: ${w}\n`);
    process.stdout.write(`${c.file ?? 'embedded default'}: ok\n`);
  });

program
  .command('token')
  .description('print a new random token (32 random bytes, base64url)')
  .action(() => {
    process.stdout.write(`${newToken()}\n`);
  });

const send = program.command('send').description('send a request to the running service (URL and token from the config)');
send
  .command('wake')
  .argument('<text>', 'the event text')
  .addOption(new Option('--mode <mode>', 'when the main agent sees it').choices(WAKE_MODES).default('now'))
  .option('--idempotency-key <key>')
  .addOption(configOption())
  .addOption(urlOption())
  .action(async (text: string, opts: { mode: string; config?: string; url?: string; idempotencyKey?: string }) => {
    await post(opts, 'wake', { text, mode: opts.mode }, opts.idempotencyKey);
  });
send
  .command('agent')
  .argument('<message>', 'the prompt for the agent')
  .option('--name <name>', 'hook name used in the summary')
  .option('--agent-id <id>')
  .option('--session-key <key>')
  .addOption(new Option('--session-mode <mode>').choices(SESSION_MODES))
  .addOption(new Option('--wake-mode <mode>').choices(WAKE_MODES))
  .option('--no-deliver', 'do not deliver the reply to a channel')
  .option('--channel <channel>')
  .option('--to <to>')
  .option('--model <model>')
  .option('--thinking <level>')
  .option('--timeout <seconds>', 'timeoutSeconds', Number)
  .option('--idempotency-key <key>')
  .addOption(configOption())
  .addOption(urlOption())
  .action(async (message: string, o: Record<string, unknown>) => {
    const body: Record<string, unknown> = {
      message,
      name: o.name,
      agentId: o.agentId,
      sessionKey: o.sessionKey,
      sessionMode: o.sessionMode,
      wakeMode: o.wakeMode,
      deliver: o.deliver,
      channel: o.channel,
      to: o.to,
      model: o.model,
      thinking: o.thinking,
      timeoutSeconds: o.timeout,
    };
    await post(o as { config?: string; url?: string }, 'agent', body, o.idempotencyKey as string | undefined);
  });
send
  .command('hook')
  .argument('<name>', 'the mapped hook name (path under hooks.path)')
  .requiredOption('--data <json>', 'the JSON body')
  .option('--idempotency-key <key>')
  .addOption(configOption())
  .addOption(urlOption())
  .action(async (name: string, o: { data: string; idempotencyKey?: string; config?: string; url?: string }) => {
    let body: unknown;
    try {
      body = JSON.parse(o.data);
    } catch (err) {
      fail(`--data is not valid JSON: ${(err as Error).message}`);
    }
    await post(o, name, body, o.idempotencyKey);
  });

const runs = program.command('runs').description('agent runs in the store');
runs
  .command('list')
  .addOption(new Option('--state <state>').choices(RUN_STATES))
  .option('--session <key>', 'only runs of this session key')
  .option('--limit <n>', 'how many, newest first', Number, 50)
  .option('--json', 'print JSON')
  .addOption(configOption())
  .action(async (o: { state?: RunState; session?: string; limit: number; json?: boolean; config?: string }) => {
    await withStore(o.config, async (store) => {
      const list = await store.listRuns({ state: o.state, sessionKey: o.session, limit: o.limit });
      if (o.json) return printJson(list);
      const rows = list.map((r) => ({ ...r, created: time(r.createdAt), model: r.model ?? 'default' }));
      process.stdout.write(`${table(rows, ['id', 'state', 'created', 'name', 'agentId', 'sessionKey', 'model', 'attempts'])}\n`);
    });
  });
runs
  .command('show')
  .argument('<id>')
  .option('--json', 'print JSON')
  .addOption(configOption())
  .action(async (id: string, o: { json?: boolean; config?: string }) => {
    await withStore(o.config, async (store) => {
      const run = await store.getRun(id);
      if (!run) fail(`no run ${id}`);
      if (o.json) return printJson(run);
      const lines = [
        `run ${run.id}`,
        `  state:      ${run.state} (attempts ${run.attempts})`,
        `  created:    ${time(run.createdAt)}   started: ${time(run.startedAt)}   finished: ${time(run.finishedAt)}`,
        `  hook:       ${run.name} via ${run.hookPath}${run.mappingId ? ` (mapping ${run.mappingId})` : ''}`,
        `  agent:      ${run.agentId}   session: ${run.sessionKey} (${run.sessionMode})`,
        `  model:      ${run.model ?? 'agent default'}${run.thinking ? `   thinking: ${run.thinking}` : ''}   timeout: ${run.timeoutSeconds}s`,
        `  delivery:   ${run.deliver ? `${run.channel}${run.to ? ` → ${run.to}` : ''}` : 'off'}   wakeMode: ${run.wakeMode}`,
        `  message:    ${logSafe(run.message, 200)}`,
      ];
      // On an unfinished run, `error` holds why it was given back to the queue (a stop interrupted it): a note.
      if (run.error) lines.push(run.state === 'queued' || run.state === 'running' ? `  note:       ${run.error}` : `  error:      ${run.error}`);
      if (run.reply) lines.push(`  reply:      ${logSafe(run.reply, 200)}`);
      if (run.deliveryStatus) lines.push(`  reply went: ${run.deliveryStatus}`);
      for (const d of await store.listDeliveries({ runId: run.id })) {
        lines.push(`  delivery:   ${d.id} ${d.state} → ${d.channel}${d.to ? `:${d.to}` : ''} (attempts ${d.attempts}${d.lastError ? `, last error: ${d.lastError}` : ''})`);
      }
      process.stdout.write(`${lines.join('\n')}\n`);
    });
  });
runs
  .command('retry')
  .argument('<id>')
  .description('put a finished run back in the queue (same run id)')
  .addOption(configOption())
  .action(async (id: string, o: { config?: string }) => {
    await withStore(o.config, async (store) => {
      const run = await store.requeueRun(id, Date.now());
      if (!run) fail(`no finished run ${id} (only failed, timed_out or succeeded runs can be retried)`);
      process.stdout.write(`run ${id} queued again\n`);
    });
  });

const sessions = program.command('sessions').description('sessions and their pending system events');
sessions
  .command('list')
  .option('--limit <n>', 'how many, most recent first', Number, 50)
  .option('--json', 'print JSON')
  .addOption(configOption())
  .action(async (o: { limit: number; json?: boolean; config?: string }) => {
    await withStore(o.config, async (store) => {
      const list = await store.listSessions(o.limit);
      if (o.json) return printJson(list);
      const rows = list.map((s) => ({ ...s, last: time(s.lastActivityAt), route: s.lastChannel ? `${s.lastChannel}:${s.lastTo ?? ''}` : null }));
      process.stdout.write(`${table(rows, ['key', 'agentId', 'pendingEvents', 'runs', 'last', 'route'])}\n`);
    });
  });
sessions
  .command('show')
  .argument('<key>')
  .option('--json', 'print JSON')
  .addOption(configOption())
  .action(async (key: string, o: { json?: boolean; config?: string }) => {
    await withStore(o.config, async (store) => {
      const s = await store.getSession(key);
      if (!s) fail(`no session ${key}`);
      if (o.json) return printJson(s);
      const out = [
        `session ${s.key} (agent ${s.agentId})`,
        `  last route: ${s.lastChannel ? `${s.lastChannel} → ${s.lastTo ?? ''}` : 'none'}`,
        `  transcript (last ${s.transcript.length} messages):`,
        ...s.transcript.map((m) => `    ${time(m.createdAt)}  ${m.role.padEnd(9)} ${logSafe(m.content, 160)}`),
        `  pending system events (${s.pending.length}):`,
        ...s.pending.map((e) => `    ${time(e.createdAt)}  [${e.origin}] ${logSafe(e.text, 160)}  (${e.id})`),
        `  recent runs (${s.recentRuns.length}):`,
        ...s.recentRuns.map((r) => `    ${time(r.createdAt)}  ${r.state.padEnd(9)} ${r.id}  ${logSafe(r.name, 40)}`),
      ];
      process.stdout.write(`${out.join('\n')}\n`);
    });
  });

sessions
  .command('route')
  .argument('<key>', 'the session (usually main)')
  .description("set a session's last route by hand: where `channel: last` replies and heartbeat replies go")
  .requiredOption('--channel <channel>')
  .requiredOption('--to <to>')
  .addOption(configOption())
  .action(async (key: string, o: { channel: string; to: string; config?: string }) => {
    await withStore(o.config, async (store, config) => {
      const channel = normalizeChannelName(o.channel);
      const known = configuredChannelIds(config);
      if (!known.includes(channel) && config.channels.plugins.length === 0) fail(`channel "${o.channel}" is not configured (configured: ${known.join(', ')})`);
      await store.setRoute(key, defaultAgentId(config), channel, o.to, Date.now());
      process.stdout.write(`session ${key}: last route ${channel} → ${o.to}\n`);
    });
  });

const deliveries = program.command('deliveries').description('the outbox: replies on their way to channels');
deliveries
  .command('list')
  .option('--failed', 'only dead-lettered deliveries')
  .addOption(new Option('--state <state>').choices(DELIVERY_STATES))
  .option('--limit <n>', 'how many, newest first', Number, 50)
  .option('--json', 'print JSON')
  .addOption(configOption())
  .action(async (o: { failed?: boolean; state?: DeliveryState; limit: number; json?: boolean; config?: string }) => {
    await withStore(o.config, async (store) => {
      const list = await store.listDeliveries({ state: o.failed ? 'dead' : o.state, limit: o.limit });
      if (o.json) return printJson(list);
      const rows = list.map((d) => ({ ...d, created: time(d.createdAt), route: `${d.channel}${d.to ? `:${d.to}` : ''}`, run: d.runId ?? (d.heartbeatId ? 'heartbeat' : null) }));
      process.stdout.write(`${table(rows, ['id', 'state', 'created', 'route', 'run', 'attempts', 'lastError'])}\n`);
    });
  });
deliveries
  .command('retry')
  .argument('<id>')
  .description('send a dead-lettered delivery again (attempts start over); the running service picks it up')
  .addOption(configOption())
  .action(async (id: string, o: { config?: string }) => {
    await withStore(o.config, async (store) => {
      const d = await store.retryDelivery(id, Date.now());
      if (!d) fail(`no dead or pending delivery ${id}`);
      process.stdout.write(`delivery ${id} queued again\n`);
    });
  });

program
  .command('received')
  .description('the record of received hook requests (metadata only: never a payload or a token), newest first')
  .option('--rejected', 'only requests answered with an error (status 400 or more)')
  .option('--limit <n>', 'how many, newest first', Number, 50)
  .option('--json', 'print JSON')
  .addOption(configOption())
  .action(async (o: { rejected?: boolean; limit: number; json?: boolean; config?: string }) => {
    await withStore(o.config, async (store) => {
      const list = await store.listReceived(o.limit, { rejected: o.rejected ?? false });
      if (o.json) return printJson(list);
      const rows = list.map((r) => ({
        ...r,
        at: time(r.at),
        code: r.code ?? '',
        mapping: r.mappingId,
        ids: [...r.eventIds, ...r.runIds].join(' ') || null,
        ms: r.durationMs.toFixed(1),
      }));
      process.stdout.write(`${table(rows, ['at', 'path', 'clientIp', 'status', 'code', 'mapping', 'ids', 'ms'])}\n`);
    });
  });

async function post(opts: { config?: string; url?: string }, path: string, body: unknown, idempotencyKey?: string): Promise<void> {
  const config = cliConfig(opts.config);
  const endpoint = serviceEndpoint(config);
  const token = endpoint.token;
  const url = opts.url ? `${opts.url.replace(/\/+$/, '')}${config.hooks.path}` : endpoint.url;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
  let res: Response;
  try {
    res = await fetch(`${url}/${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
  } catch (err) {
    fail(`cannot reach hookgate at ${url}: ${((err as Error).cause as Error | undefined)?.message ?? (err as Error).message}`);
  }
  const text = await res.text();
  process.stdout.write(`${res.status} ${text}\n`);
  if (!res.ok) process.exitCode = 1;
}

function fail(message: string): never {
  process.stderr.write(`hookgate: ${message}\n`);
  process.exit(1);
}

program.parseAsync().catch((err: unknown) => {
  if (err instanceof ConfigError) {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
  process.stderr.write(`hookgate: ${(err as Error).message}\n`);
  process.exit(1);
});
