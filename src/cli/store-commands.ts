/** The commands that read (and repair) the store: runs, sessions, deliveries, received. They never load the server. */
import { type Command, InvalidArgumentError, Option } from 'commander';
import {
  accountProblem,
  configuredAccounts,
  configuredChannelIds,
  defaultAgentId,
  normalizeChannelName,
} from '../config/lookup.js';
import { DEFAULT_ACCOUNT_ID } from '../config/schema/accounts.js';
import { parseDuration } from '../config/schema/common.js';
import { DELIVERY_STATE_NAMES, deliveryStateName, RUN_STATES, storedDeliveryState } from '../enums.js';
import { CliError } from '../errors.js';
import type { Delivery, DeliveryState, OperatorStore, RunState, SystemEvent } from '../store/types.js';
import { logSafe } from '../text-safe.js';
import { type CliStore, fullConfig, withStore } from './context.js';
import { printJson, routeText, table, time } from './format.js';
import { configOption, jsonOption, limitOption } from './options.js';
import { auditCli } from './audit-command.js';
import { loadRecipientCheck } from '../channels/registry.js';

interface StoreOpts {
  config?: string;
  json?: boolean;
}

export function addStoreCommands(program: Command): void {
  addRuns(program);
  addSessions(program);
  addDeliveries(program);
  program
    .command('received')
    .description(
      'the record of received hook requests (metadata only: never a payload or a token), newest first; refusals as counts per time window',
    )
    .option(
      '--rejected',
      'only requests answered with an error (status 400 or more): counts per window, status, code, path class and address',
    )
    .addOption(limitOption())
    .addOption(jsonOption())
    .addOption(configOption())
    .action(async (o: StoreOpts & { rejected?: boolean; limit: number }) => {
      await withStore(o.config, async (store) => {
        const list = await store.listReceived(o.limit, { rejected: o.rejected ?? false });
        if (o.json) return printJson(list);
        // A count of refusals (`count`) stands for many requests: its time is the window's start, its path the path
        // class, its address the bucket (IPv6 by /64); it has no ids and no duration.
        const rows = list.map((r) => ({
          ...r,
          at: time(r.at),
          window: r.windowMs ? `${r.windowMs / 1000} s` : null,
          count: r.count ?? 1,
          code: r.code ?? '',
          mapping: r.mappingId,
          token: r.tokenId ?? null,
          ids: [...r.eventIds, ...r.runIds].join(' ') || null,
          ms: r.count === undefined ? r.durationMs.toFixed(1) : null,
        }));
        process.stdout.write(
          `${table(rows, ['at', 'window', 'count', 'path', 'clientIp', 'status', 'code', 'mapping', 'token', 'ids', 'ms'])}\n`,
        );
      });
    });
}

function addRuns(program: Command): void {
  const runs = program.command('runs').description('agent runs in the store');
  runs
    .command('list')
    .description('list runs, newest first')
    .addOption(new Option('--state <state>', 'only runs in this state').choices(RUN_STATES))
    .option('--session <key>', 'only runs of this session key')
    .addOption(limitOption())
    .addOption(jsonOption())
    .addOption(configOption())
    .action(async (o: StoreOpts & { state?: RunState; session?: string; limit: number }) => {
      await withStore(o.config, async (store) => {
        const list = await store.listRuns({ state: o.state, sessionKey: o.session, limit: o.limit });
        if (o.json) return printJson(list);
        const rows = list.map((r) => ({
          ...r,
          created: time(r.createdAt),
          model: r.model ?? 'default',
          node: r.node ?? null,
        }));
        process.stdout.write(
          `${table(rows, ['id', 'state', 'created', 'name', 'agentId', 'sessionKey', 'model', 'attempts', 'node'])}\n`,
        );
      });
    });
  recordCommand(runs, {
    name: 'show',
    description: 'one run: state, attempts, error, reply and where it went',
    arg: ['<id>', 'the run id'],
    get: (store, id) => store.getRun(id),
    missing: (id) => `no run ${id}: never accepted, or finished longer ago than hooks.runRetentionDays and pruned`,
    text: async (run, store) => {
      const lines = [
        `run ${run.id}`,
        `  state:      ${run.state} (attempts ${run.attempts})`,
        `  created:    ${time(run.createdAt)}   started: ${time(run.startedAt)}   finished: ${time(run.finishedAt)}`,
        `  node:       ${run.node ?? 'none yet'}`,
        `  hook:       ${run.name} via ${run.hookPath}${run.mappingId ? ` (mapping ${run.mappingId})` : ''}`,
        `  agent:      ${run.agentId}   session: ${run.sessionKey} (${run.sessionMode})`,
        `  model:      ${run.model ?? 'agent default'}${run.thinking ? `   thinking: ${run.thinking}` : ''}   timeout: ${run.timeoutSeconds}s`,
        `  delivery:   ${run.deliver ? `${run.channel}${run.to ? ` → ${run.to}` : ''}` : 'off'}   wakeMode: ${run.wakeMode}`,
        `  message:    ${logSafe(run.message, 200)}`,
      ];
      if (run.retries)
        lines.push(
          `  retries:    ${run.retries} after transient model failures${run.state === 'queued' && run.nextAttemptAt ? ` (next try ${time(run.nextAttemptAt)})` : ''}`,
        );
      // While a run waits, its error column says why (the last transient failure, or an interrupted stop).
      if (run.error)
        lines.push(`  ${run.state === 'queued' || run.state === 'running' ? 'note: ' : 'error:'}      ${run.error}`);
      if (run.reply) lines.push(`  reply:      ${logSafe(run.reply, 200)}`);
      if (run.deliveryStatus) lines.push(`  reply went: ${run.deliveryStatus}`);
      for (const d of await store.listDeliveries({ runId: run.id })) {
        lines.push(
          `  delivery:   ${d.id} ${deliveryStateName(d.state)} → ${d.channel}${d.to ? `:${d.to}` : ''} (attempts ${d.attempts}${d.lastError ? `, last error: ${d.lastError}` : ''})`,
        );
      }
      return lines;
    },
  });
  runs
    .command('retry')
    .description(
      'put a finished run back in the queue (same run id); with --failed, every failed run (e.g. after a model outage)',
    )
    .argument('[id]', 'the run id (omit with --failed)')
    .option('--failed', 'every run in state failed')
    .option(
      '--since <when>',
      'with --failed: only runs that finished within this long ("2h", "30m", "7d") or since this ISO time',
      '24h',
    )
    .addOption(jsonOption())
    .addOption(configOption())
    .action(async (id: string | undefined, o: StoreOpts & { failed?: boolean; since: string }) => {
      if ((id === undefined) === !o.failed) throw new CliError('cli_usage', 'give a run id, or --failed (not both)');
      await withStore(o.config, async (store) => {
        if (id !== undefined) {
          const run = await store.requeueRun(id, Date.now());
          if (!run)
            throw new CliError(
              'cli_not_found',
              `no finished run ${id} (only failed, timed_out or succeeded runs can be retried)`,
            );
          await auditCli(store, 'admin.retry', { runId: run.id });
          if (o.json) return printJson(run);
          return void process.stdout.write(`run ${run.id} queued again\n`);
        }
        const now = Date.now();
        const ids = await store.requeueFailedRuns(sinceTime(o.since, now), now);
        if (ids.length) await auditCli(store, 'admin.retry', { runIds: ids.slice(0, 100), runs: ids.length });
        if (o.json) return printJson(ids);
        process.stdout.write(
          ids.length
            ? `${ids.length} failed run${ids.length > 1 ? 's' : ''} queued again:\n${ids.join('\n')}\n`
            : 'no failed runs in that time\n',
        );
      });
    });
}

function addSessions(program: Command): void {
  const sessions = program.command('sessions').description('sessions and their pending system events');
  sessions
    .command('list')
    .description('list sessions, most recent activity first')
    .addOption(limitOption('most recent first'))
    .addOption(jsonOption())
    .addOption(configOption())
    .action(async (o: StoreOpts & { limit: number }) => {
      await withStore(o.config, async (store) => {
        const list = await store.listSessions(o.limit);
        if (o.json) return printJson(list);
        const rows = list.map((s) => ({
          ...s,
          last: time(s.lastActivityAt),
          route: s.lastChannel ? routeText(s.lastChannel, s.lastTo ?? '', s.lastAccountId) : null,
        }));
        process.stdout.write(`${table(rows, ['key', 'agentId', 'pendingEvents', 'runs', 'last', 'route'])}\n`);
      });
    });
  recordCommand(sessions, {
    name: 'show',
    description: 'one session: its route (where its replies go), transcript, pending system events, recent runs',
    arg: ['<key>', 'the session key (the main session is "main")'],
    get: (store, key) => store.getSession(key),
    missing: (key) => `no session ${key}`,
    text: (s) => [
      `session ${s.key} (agent ${s.agentId})`,
      `  route:      ${s.lastChannel ? routeText(s.lastChannel, s.lastTo ?? '', s.lastAccountId) : 'none (its replies go to channels.default, if set)'}`,
      `  transcript (last ${s.transcript.length} messages):`,
      ...s.transcript.map((m) => `    ${time(m.createdAt)}  ${m.role.padEnd(9)} ${logSafe(m.content, 160)}`),
      `  pending system events (${s.pending.length}):`,
      ...s.pending.map(
        (e) => `    ${time(e.createdAt)}  [${e.origin}]${provenance(e)} ${logSafe(e.text, 160)}  (${e.id})`,
      ),
      `  recent runs (${s.recentRuns.length}):`,
      ...s.recentRuns.map((r) => `    ${time(r.createdAt)}  ${r.state.padEnd(9)} ${r.id}  ${logSafe(r.name, 40)}`),
    ],
  });
  sessions
    .command('route')
    .description(
      "set a session's route: where its heartbeat replies (and, for main, `channel: last` replies) go; audited",
    )
    .argument('<key>', 'the session (usually main)')
    .requiredOption('--channel <channel>', 'a configured channel (telegram, slack, log, ...)')
    .requiredOption('--to <to>', 'the recipient on that channel (chat id, channel id, number, ...)')
    .option(
      '--account <id>',
      "one of the channel's accounts (channels.<platform>.accounts); default: the top-level section",
    )
    .addOption(configOption())
    .action(async (key: string, o: { channel: string; to: string; account?: string; config?: string }) => {
      // The channel is checked against the whole config, so this one command needs the channels' section valid too.
      const { config } = fullConfig(o.config);
      const channel = normalizeChannelName(o.channel);
      const known = configuredChannelIds(config);
      if (!known.includes(channel) && config.channels.plugins.length === 0) {
        throw new CliError('cli_usage', `channel "${o.channel}" is not configured (configured: ${known.join(', ')})`);
      }
      const account = o.account?.trim().toLowerCase();
      const problem = account === undefined ? undefined : accountProblem(configuredAccounts(config), channel, account);
      if (problem) throw new CliError('cli_usage', problem);
      const accountId = account === undefined || account === DEFAULT_ACCOUNT_ID ? null : account;
      const unfit = (await loadRecipientCheck(config.channels))(channel, o.to);
      if (unfit) throw new CliError('cli_usage', unfit);
      await withStore(o.config, async (store) => {
        const from = (await store.getRoute(key)) ?? null;
        await store.setRoute(key, defaultAgentId(config), channel, o.to, Date.now(), accountId);
        // Where the main agent's replies go is the operator's decision alone (docs/security.md): each one is on record.
        await auditCli(store, 'session.route', { sessionKey: key, from, to: { channel, to: o.to, accountId } });
        process.stdout.write(`session ${key}: route ${routeText(channel, o.to, accountId)}\n`);
      });
    });
}

function addDeliveries(program: Command): void {
  const deliveries = program.command('deliveries').description('the outbox: replies on their way to channels');
  deliveries
    .command('list')
    .description('list deliveries, newest first')
    .option('--failed', 'only failed (dead-lettered) deliveries (same as --state failed)')
    .addOption(
      new Option('--state <state>', 'only deliveries in this state (pending, sent, failed)')
        .choices(DELIVERY_STATE_NAMES)
        .argParser(deliveryStateOption),
    )
    .addOption(limitOption())
    .addOption(jsonOption())
    .addOption(configOption())
    .action(async (o: StoreOpts & { failed?: boolean; state?: DeliveryState; limit: number }) => {
      await withStore(o.config, async (store) => {
        const list = await store.listDeliveries({ state: o.failed ? 'dead' : o.state, limit: o.limit });
        if (o.json) return printJson(list.map(shownDelivery));
        const rows = list.map((d) => ({
          ...shownDelivery(d),
          created: time(d.createdAt),
          route: `${d.channel}${d.to ? `:${d.to}` : ''}`,
          run: d.runId ?? (d.heartbeatId ? 'heartbeat' : null),
        }));
        process.stdout.write(`${table(rows, ['id', 'state', 'created', 'route', 'run', 'attempts', 'lastError'])}\n`);
      });
    });
  recordCommand(deliveries, {
    name: 'retry',
    description: 'send a dead-lettered delivery again (attempts start over); the running service picks it up',
    arg: ['<id>', 'the delivery id'],
    get: async (store, id) => {
      const d = await store.retryDelivery(id, Date.now());
      if (d) await auditCli(store, 'admin.retry', { deliveryId: d.id });
      return d && shownDelivery(d);
    },
    missing: (id) => `no failed or pending delivery ${id}`,
    text: (d) => [`delivery ${d.id} queued again`],
  });
}

/** `--state`: a delivery state's name, or an older spelling of one (`delivered`, `dead`). */
function deliveryStateOption(word: string): DeliveryState {
  const state = storedDeliveryState(word);
  if (state === undefined) throw new InvalidArgumentError(`Allowed choices are ${DELIVERY_STATE_NAMES.join(', ')}.`);
  return state;
}

/** A delivery as the CLI prints it: its state named as in the API and the live feed. */
function shownDelivery(d: Delivery): Omit<Delivery, 'state'> & { state: string } {
  return { ...d, state: deliveryStateName(d.state) };
}

/** A command on one record by id or key: exit 1 when there is none; --json prints the record, else its text. */
function recordCommand<T>(
  parent: Command,
  spec: {
    name: string;
    description: string;
    arg: [string, string];
    get: (store: CliStore, id: string) => Promise<T | undefined>;
    missing: (id: string) => string;
    text: (record: T, store: OperatorStore) => string[] | Promise<string[]>;
  },
): void {
  parent
    .command(spec.name)
    .description(spec.description)
    .argument(...spec.arg)
    .addOption(jsonOption())
    .addOption(configOption())
    .action(async (id: string, o: StoreOpts) => {
      await withStore(o.config, async (store) => {
        const record = await spec.get(store, id);
        if (record === undefined) throw new CliError('cli_not_found', spec.missing(id));
        if (o.json) return printJson(record);
        process.stdout.write(`${(await spec.text(record, store)).join('\n')}\n`);
      });
    });
}

/** `--since`: a duration back from now ("2h", "30m", "7d") or an ISO time. */
export function sinceTime(value: string, now: number): number {
  const span = parseDuration(value);
  if (span !== undefined && span > 0) return now - span;
  const at = Date.parse(value);
  if (Number.isFinite(at)) return at;
  throw new CliError(
    'cli_usage',
    `--since: expected a duration like "2h" or "30m", or an ISO time like 2026-11-25T08:00:00Z, got ${JSON.stringify(value)}`,
  );
}

/** An untrusted event's flag and source in `sessions show` (shown wrapped to the model: see runtime/prompt.ts). */
function provenance(e: SystemEvent): string {
  if (!e.untrusted) return '';
  return e.source ? ` [untrusted: ${logSafe(e.source, 60)}]` : ' [untrusted]';
}
