/**
 * `hookgate tail [--json]`: follows the live feed of the running service (`GET /api/v1/events` on the admin
 * listener): one line per event for people, or the event's JSON per line with --json. Reconnects by itself with
 * `Last-Event-ID`, so a restart of the listener or a dropped connection loses nothing still in the service's buffer;
 * when it cannot resume, the service says `reset` and tail says so on stderr. A client of the service only: it loads
 * neither the server nor the store.
 */
import { type Command, Option } from 'commander';
import { CliError } from '../errors.js';
import { FEED_EVENT_TYPES, type FeedEvent } from '../feed.js';
import { openStream } from '../http/client.js';
import { SseParser } from '../sse.js';
import { terminalSafe } from '../text-safe.js';
import { adminEndpoint } from './endpoint.js';
import { configOption } from './options.js';

const hhmmss = (at: number) => new Date(at).toISOString().slice(11, 23);
const s = (v: unknown) => terminalSafe(String(v ?? ''));

/** One line for people. */
export function eventLine(e: FeedEvent & { node?: string }): string {
  const node = e.node ? ` [${s(e.node)}]` : '';
  switch (e.type) {
    case 'received': {
      const ids = [...e.eventIds.map((id) => `event ${id}`), ...e.runIds.map((id) => `run ${id}`)].join(', ');
      return `${hhmmss(e.at)} received  ${e.status} /${s(e.path)} (${s(e.route)})${e.code ? ` ${s(e.code)}` : ''} ${Math.round(e.durationMs)} ms from ${s(e.clientIp)}${ids ? `: ${ids}` : ''}${node}`;
    }
    case 'run':
      return `${hhmmss(e.at)} run       ${e.runId} ${e.state} (${s(e.hookName)}, ${s(e.sessionKey)})${e.durationMs !== undefined ? ` ${Math.round(e.durationMs)} ms` : ''}${e.error ? `: ${s(e.error)}` : ''}${node}`;
    case 'delivery':
      return `${hhmmss(e.at)} delivery  ${e.deliveryId} ${e.change} via ${s(e.channel)} (attempt ${e.attempts})${e.runId ? ` run ${e.runId}` : ''}${e.lastError ? `: ${s(e.lastError)}` : ''}${node}`;
    case 'heartbeat':
      return `${hhmmss(e.at)} heartbeat ${s(e.sessionKey)} ${e.outcome}, ${e.events} events${node}`;
  }
}

interface TailOpts {
  config?: string;
  url?: string;
  json?: boolean;
  types?: string;
}

export function addTailCommand(program: Command): void {
  program
    .command('tail')
    .description(
      'follow the live feed of the running service (admin listener): received hooks, runs, deliveries, heartbeats; reconnects by itself',
    )
    .option('--json', 'one JSON object per line (the event, with its id) instead of text')
    .addOption(new Option('--types <list>', `only these event types, comma-separated (${FEED_EVENT_TYPES.join(', ')})`))
    .addOption(new Option('--url <url>', "the admin listener's base URL (default: from admin.bind and admin.port)"))
    .addOption(configOption())
    .action(async (o: TailOpts) => {
      const endpoint = adminEndpoint(o.config);
      await follow({
        url: o.url ?? endpoint.url,
        token: endpoint.token,
        json: o.json ?? false,
        ...(o.types ? { types: o.types } : {}),
      });
    });
}

/** Follow until the process is stopped; a refused token or bad query ends it with an error (exit 1). */
async function follow(opts: { url: string; token: string; json: boolean; types?: string }): Promise<never> {
  let lastId: string | undefined;
  let delay = 500;
  let said = false;
  for (;;) {
    const outcome = await stream(opts, lastId, (id) => {
      lastId = id;
      delay = 500;
      if (said) process.stderr.write('hookgate: live feed connected again\n');
      said = false;
    });
    if (outcome.fatal) throw outcome.fatal;
    if (!said)
      process.stderr.write(
        `hookgate: live feed ${outcome.why}; reconnecting${lastId ? ' from the last event seen' : ''}\n`,
      );
    said = true;
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 10_000);
  }
}

/** One connection: resolves when it ends (`why`), or with `fatal` when retrying cannot help. */
async function stream(
  opts: { url: string; token: string; json: boolean; types?: string },
  lastId: string | undefined,
  seen: (id: string) => void,
): Promise<{ why: string; fatal?: CliError }> {
  const target = new URL('/api/v1/events', opts.url);
  if (opts.types) target.searchParams.set('types', opts.types);
  const headers: Record<string, string> = { accept: 'text/event-stream', authorization: `Bearer ${opts.token}` };
  if (lastId) headers['last-event-id'] = lastId;
  // The admin listener's address is the config's: the feed's URL is never taken from an answer.
  const res = await openStream(target.toString(), { headers });
  if (res.kind !== 'stream')
    return { why: `unreachable at ${opts.url} (${res.kind === 'network' ? res.code : res.kind})` };
  if (res.status === 401 || res.status === 400) {
    await res.body?.cancel().catch(() => undefined);
    const why =
      res.status === 401
        ? 'the admin listener refused the admin token (401)'
        : `the admin listener refused the request (400; check --types)`;
    return { why, fatal: new CliError(res.status === 401 ? 'cli_token_missing' : 'cli_usage', why) };
  }
  if (res.status !== 200 || !res.body) {
    await res.body?.cancel().catch(() => undefined);
    return { why: `answered ${res.status}` };
  }
  const parser = new SseParser((m) => emit(opts.json, m.id, m.event, m.data, seen));
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body) parser.push(decoder.decode(chunk, { stream: true }));
  } catch {
    // A dropped connection ends the stream like a closed one: tail reconnects either way.
  }
  return { why: 'connection closed' };
}

function emit(json: boolean, id: string | undefined, type: string, data: string, seen: (id: string) => void): void {
  if (id !== undefined) seen(id);
  let event: Record<string, unknown>;
  try {
    event = JSON.parse(data) as Record<string, unknown>;
  } catch {
    return;
  }
  if (type === 'reset') {
    process.stderr.write(
      `hookgate: the service could not resume the feed where it stopped (${s(event.reason)}): events may have been missed; following live\n`,
    );
    return;
  }
  if (json) process.stdout.write(`${JSON.stringify({ id, ...event })}\n`);
  else if ((FEED_EVENT_TYPES as readonly string[]).includes(type))
    process.stdout.write(`${eventLine(event as unknown as FeedEvent)}\n`);
}
