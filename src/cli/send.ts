/**
 * `hookgate send`: a client of the running service. Stdout is the answer's body alone (one line of JSON, for jq);
 * the HTTP status is the exit code (0 for 2xx, 1 otherwise) and, with --verbose, a line on stderr. `send agent --wait`
 * says how the run ended instead (send-wait.ts).
 */
import { randomUUID } from 'node:crypto';
import { type Command, Option } from 'commander';
import { normalizeMatchPath } from '../config/client.js';
import { SESSION_MODES, WAKE_MODES } from '../enums.js';
import { CliError } from '../errors.js';
import { type HttpResponse, is2xx, request } from '../http/client.js';
import { adminEndpoint, serviceEndpoint } from './endpoint.js';
import { verbose } from './flags.js';
import { collect, configOption, parsePositiveNumber } from './options.js';
import type { BodyOpts } from './request-input.js';
import { answerBody, followRun, type Progress, WAIT_EXIT, waitExitCode } from './send-wait.js';

interface SendOpts {
  config?: string;
  url?: string;
  adminUrl?: string;
  idempotencyKey?: string;
}

const urlOption = () =>
  new Option('--url <url>', "the service's base URL (default: from gateway.bind and gateway.port)");
const idempotencyOption = () =>
  new Option('--idempotency-key <key>', 'sent as Idempotency-Key: a repeat is answered as a duplicate, not run again');

export function addSendCommands(program: Command): void {
  const send = program
    .command('send')
    .description(
      'send a request to the running service (URL and token from the config); prints the answer, exit 0 on 2xx',
    );
  send
    .command('wake')
    .description('POST /wake: a system event for the main session')
    .argument('<text>', 'the event text')
    .addOption(new Option('--mode <mode>', 'when the main agent sees it').choices(WAKE_MODES).default('now'))
    .addOption(idempotencyOption())
    .addOption(configOption())
    .addOption(urlOption())
    .action(async (text: string, opts: SendOpts & { mode: string }) => {
      await post(opts, 'wake', Buffer.from(JSON.stringify({ text, mode: opts.mode })));
    });
  send
    .command('agent')
    .description('POST /agent: an isolated agent run')
    .argument('<message>', 'the prompt for the agent')
    .option('--name <name>', 'hook name used in the summary')
    .option('--agent-id <id>', 'which agent runs it (default: the default agent)')
    .option('--session-key <key>', 'the session to run in (needs hooks.allowRequestSessionKey)')
    .addOption(
      new Option('--session-mode <mode>', 'isolated (a new session per run) or persistent').choices(SESSION_MODES),
    )
    .addOption(new Option('--wake-mode <mode>', "when the main session hears of the run's summary").choices(WAKE_MODES))
    .option('--no-deliver', 'do not deliver the reply to a channel')
    .option('--channel <channel>', 'where the reply goes (default: last)')
    .option('--to <to>', 'the recipient on that channel')
    .option('--account-id <id>', "one of the channel's accounts (channels.<platform>.accounts; needs --channel)")
    .option(
      '--wait',
      'hold the answer until the run ends (waitForCompletion): its progress on stderr, its completion on stdout, ' +
        'exit 0 only for a reply delivered or held back on purpose',
    )
    .option(
      '--admin-url <url>',
      "with --wait: the admin listener's base URL, asked for the run's progress (default: admin.bind, admin.port)",
    )
    .option('--model <model>', 'a model override: <provider>/<model> or an alias')
    .option('--thinking <level>', 'thinking level passed to the provider')
    .addOption(new Option('--timeout <seconds>', 'timeoutSeconds of the run').argParser(parsePositiveNumber))
    .addOption(idempotencyOption())
    .addOption(configOption())
    .addOption(urlOption())
    .action(async (message: string, o: SendOpts & Record<string, unknown>) => {
      const body = {
        message,
        name: o.name,
        agentId: o.agentId,
        sessionKey: o.sessionKey,
        sessionMode: o.sessionMode,
        wakeMode: o.wakeMode,
        deliver: o.deliver,
        channel: o.channel,
        to: o.to,
        accountId: o.accountId,
        model: o.model,
        thinking: o.thinking,
        timeoutSeconds: o.timeout,
      };
      if (o.wait) return waitForRun(o, body);
      await post(o, 'agent', Buffer.from(JSON.stringify(body)));
    });
  send
    .command('hook')
    .description('POST a JSON body to a mapped hook ({hooks.path}/NAME)')
    .argument('<name>', 'the mapped hook name (path under hooks.path)')
    .option('--data <body>', 'the body (JSON unless --content-type says otherwise): inline, @FILE, or - (stdin), as is')
    .option(
      '--form <name=value>',
      'a form field (repeatable), sent as application/x-www-form-urlencoded; @FILE: an encoded form body',
      collect,
      [],
    )
    .option('--content-type <type>', 'the Content-Type of --data (default application/json)')
    .option('-H, --header <name:value>', 'an extra request header (repeatable), e.g. for match.headers', collect, [])
    .option('--sign', "sign the body the way the matching mapping's signature expects, with its secret from the config")
    .addOption(idempotencyOption())
    .addOption(configOption())
    .addOption(urlOption())
    .action(async (name: string, o: SendOpts & BodyOpts & { header: string[]; sign?: boolean }) => {
      // Loaded here only: what reads a body and finds its mapping is not needed by wake and agent.
      const { parseHeader, requestBody } = await import('./request-input.js');
      const { raw, contentType, payload } = requestBody(o);
      const headers = { 'content-type': contentType, ...Object.fromEntries(o.header.map(parseHeader)) };
      const signed = o.sign ? await signatureHeaders(o.config, name, payload, headers, raw) : undefined;
      await post(o, name, raw, headers, signed);
    });
}

/** What a signed request adds: its headers, and the query string its scheme signs (Twilio's `?bodySHA256=`), else ''. */
interface Signed {
  headers: Record<string, string>;
  query: string;
}

/**
 * The headers (and query string) the matching mapping's signature scheme expects for this body (the service picks
 * the first mapping matching path, `source` and `match.headers`, in config order). Reads the config's hooks section
 * alone: the mappings and their secrets.
 */
async function signatureHeaders(
  flag: string | undefined,
  name: string,
  payload: unknown,
  headers: Record<string, string>,
  raw: Buffer,
): Promise<Signed> {
  const [{ locate }, { loadConfigSection }, { matchingMapping }, { signedQuery, signRequest }] = await Promise.all([
    import('./endpoint.js'),
    import('../config/load.js'),
    import('./request-input.js'),
    import('../hooks/mappings/signatures.js'),
  ]);
  const location = locate(flag);
  const hooks = location.file ? loadConfigSection(location.file, 'hooks').value : undefined;
  const found = hooks ? matchingMapping({ hooks }, name, payload, headers) : undefined;
  const subPath = normalizeMatchPath(name);
  if (!found)
    throw new CliError(
      'cli_not_found',
      `--sign: no mapping or preset matches "${subPath}" with this body and these headers`,
    );
  const { at, mapping: m } = found;
  if (!m.signature) {
    throw new CliError(
      'cli_usage',
      `--sign: ${at} (the mapping for "${subPath}") has no signature; it takes the hook token, so send without --sign`,
    );
  }
  verbose(`signing for ${at} (${m.signature.scheme})`);
  return { headers: signRequest(m.signature, raw, Date.now()), query: signedQuery(m.signature, raw) };
}

async function post(
  opts: SendOpts,
  path: string,
  body: Buffer,
  extra: Record<string, string> = {},
  signed?: Signed,
): Promise<void> {
  const res = await exchange(opts, path, body, extra, signed);
  process.stdout.write(oneLine(res.text));
  process.exitCode = is2xx(res.status) ? 0 : 1;
}

/**
 * `send agent --wait`: the run is accepted first (its id at once), then the same request with `waitForCompletion`
 * and the same Idempotency-Key holds the answer until the run ends (a replay waits for the first run), while the run's
 * progress goes to stderr. The exit code says how the run ended (WAIT_EXIT).
 */
async function waitForRun(o: SendOpts, body: Record<string, unknown>): Promise<void> {
  const opts = { ...o, idempotencyKey: o.idempotencyKey ?? randomUUID() };
  const endpoint = serviceEndpoint(o.config);
  const first = await exchange(opts, 'agent', Buffer.from(JSON.stringify(body)), {}, undefined, endpoint);
  const accepted = answerBody(first.text);
  const runId = accepted?.runId;
  if (!is2xx(first.status) || typeof runId !== 'string') {
    process.stdout.write(oneLine(first.text));
    process.exitCode = 1;
    return;
  }
  const progress = follow(o, runId);
  let held: HttpResponse;
  try {
    const waiting = Buffer.from(JSON.stringify({ ...body, waitForCompletion: true }));
    held = await exchange(opts, 'agent', waiting, {}, undefined, endpoint);
  } finally {
    await progress?.stop();
  }
  const answer = answerBody(held.text);
  if (!is2xx(held.status) || !answer) {
    process.stdout.write(oneLine(held.text));
    process.exitCode = 1;
    return;
  }
  // The held answer is a replay of the first: it is `duplicate` only when the first was.
  if (accepted?.duplicate === undefined) delete answer.duplicate;
  process.stdout.write(`${JSON.stringify(answer)}\n`);
  process.exitCode = waitExitCode(answer.completion as { status?: unknown } | undefined);
  if (process.exitCode === WAIT_EXIT.pending) {
    const hint = `follow it with \`hookgate runs show ${runId}\``;
    process.stderr.write(`hookgate: run ${runId} has not ended yet (it goes on): ${hint}\n`);
  }
}

/** The run's progress from the admin API, or a note on stderr when there is no admin listener to ask. */
function follow(o: SendOpts, runId: string): Progress | undefined {
  let why: string;
  try {
    const admin = adminEndpoint(o.config);
    const url = o.adminUrl?.replace(/\/+$/, '') ?? admin.url;
    return followRun({ url, token: admin.token }, runId, process.stderr);
  } catch (err) {
    if (!(err instanceof CliError)) throw err;
    why = err.message;
  }
  process.stderr.write(`hookgate: waiting for run ${runId} without progress: ${why}\n`);
  return undefined;
}

/** POSTs to the hooks listener; the answer whatever its status, or cli_unreachable. */
async function exchange(
  opts: SendOpts,
  path: string,
  body: Buffer,
  extra: Record<string, string> = {},
  signed?: Signed,
  endpoint = serviceEndpoint(opts.config),
): Promise<HttpResponse> {
  const { config, url: configured, token } = endpoint;
  const base = opts.url ? `${opts.url.replace(/\/+$/, '')}${config.hooks.path}` : configured;
  const headers: Record<string, string> = { 'content-type': 'application/json', ...extra };
  // A signed request is authenticated by its signature alone: the hook token is not sent along with it.
  if (signed) Object.assign(headers, signed.headers);
  else headers.authorization = `Bearer ${token}`;
  if (opts.idempotencyKey) headers['idempotency-key'] = opts.idempotencyKey;
  const target = `${base}/${path}${signed?.query ?? ''}`;
  // The target is the operator's --url or the config's listener: never taken from an answer.
  const res = await request(target, { method: 'POST', headers, body }, { plainHttp: true });
  if (res.kind !== 'response')
    throw new CliError(
      'cli_unreachable',
      `cannot reach hookgate at ${base}: ${res.kind === 'network' ? res.code : res.kind}`,
    );
  verbose(`POST ${target} → ${res.status} ${res.statusText}`);
  return res;
}

/** The body on one line: JSON re-printed compactly, anything else as it came; nothing for an empty body. */
export function oneLine(text: string): string {
  if (text.trim() === '') return '';
  try {
    return `${JSON.stringify(JSON.parse(text))}\n`;
  } catch {
    return text.endsWith('\n') ? text : `${text}\n`;
  }
}
