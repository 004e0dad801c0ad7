/**
 * `hookgate send`: a client of the running service. Stdout is the answer's body alone (one line of JSON, for jq);
 * the HTTP status is the exit code (0 for 2xx, 1 otherwise) and, with --verbose, a line on stderr.
 */
import { type Command, Option } from 'commander';
import { normalizeMatchPath } from '../config/client.js';
import { SESSION_MODES, WAKE_MODES } from '../enums.js';
import { CliError } from '../errors.js';
import { is2xx, request } from '../http/client.js';
import { serviceEndpoint } from './endpoint.js';
import { verbose } from './flags.js';
import { collect, configOption, parsePositiveNumber } from './options.js';

interface SendOpts {
  config?: string;
  url?: string;
  idempotencyKey?: string;
}

const urlOption = () => new Option('--url <url>', "the service's base URL (default: from gateway.bind and gateway.port)");
const idempotencyOption = () => new Option('--idempotency-key <key>', 'sent as Idempotency-Key: a repeat is answered as a duplicate, not run again');

export function addSendCommands(program: Command): void {
  const send = program
    .command('send')
    .description('send a request to the running service (URL and token from the config); prints the answer, exit 0 on 2xx');
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
    .addOption(new Option('--session-mode <mode>', 'isolated (a new session per run) or persistent').choices(SESSION_MODES))
    .addOption(new Option('--wake-mode <mode>', "when the main session hears of the run's summary").choices(WAKE_MODES))
    .option('--no-deliver', 'do not deliver the reply to a channel')
    .option('--channel <channel>', 'where the reply goes (default: last)')
    .option('--to <to>', 'the recipient on that channel')
    .option('--account-id <id>', "one of the channel's accounts (channels.<platform>.accounts; needs --channel)")
    .option('--wait', 'hold the answer until the run ends (waitForCompletion): prints its completion, reply included')
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
        ...(o.wait ? { waitForCompletion: true } : {}),
      };
      await post(o, 'agent', Buffer.from(JSON.stringify(body)));
    });
  send
    .command('hook')
    .description('POST a JSON body to a mapped hook ({hooks.path}/NAME)')
    .argument('<name>', 'the mapped hook name (path under hooks.path)')
    .requiredOption('--data <json>', 'the JSON body: inline, @FILE to read a file, or - to read stdin (sent byte for byte)')
    .option('-H, --header <name:value>', 'an extra request header (repeatable), e.g. for match.headers', collect, [])
    .option('--sign', "sign the body the way the matching mapping's signature expects, with its secret from the config")
    .addOption(idempotencyOption())
    .addOption(configOption())
    .addOption(urlOption())
    .action(async (name: string, o: SendOpts & { data: string; header: string[]; sign?: boolean }) => {
      // Loaded here only: what reads a body and finds its mapping is not needed by wake and agent.
      const { parseHeader, parseJsonData, readData } = await import('./request-input.js');
      const raw = readData(o.data);
      const payload = parseJsonData(raw);
      const headers = Object.fromEntries(o.header.map(parseHeader));
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
async function signatureHeaders(flag: string | undefined, name: string, payload: unknown, headers: Record<string, string>, raw: Buffer): Promise<Signed> {
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
  if (!found) throw new CliError('cli_not_found', `--sign: no mapping or preset matches "${subPath}" with this body and these headers`);
  const { at, mapping: m } = found;
  if (!m.signature) {
    throw new CliError('cli_usage', `--sign: ${at} (the mapping for "${subPath}") has no signature; it takes the hook token, so send without --sign`);
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
  const { config, url: configured, token } = serviceEndpoint(opts.config);
  const base = opts.url ? `${opts.url.replace(/\/+$/, '')}${config.hooks.path}` : configured;
  const headers: Record<string, string> = { 'content-type': 'application/json', ...extra };
  // A signed request is authenticated by its signature alone: the hook token is not sent along with it.
  if (signed) Object.assign(headers, signed.headers);
  else headers.authorization = `Bearer ${token}`;
  if (opts.idempotencyKey) headers['idempotency-key'] = opts.idempotencyKey;
  const target = `${base}/${path}${signed?.query ?? ''}`;
  // The target is the operator's --url or the config's listener: never taken from an answer.
  const res = await request(target, { method: 'POST', headers, body }, { plainHttp: true });
  if (res.kind !== 'response') throw new CliError('cli_unreachable', `cannot reach hookgate at ${base}: ${res.kind === 'network' ? res.code : res.kind}`);
  verbose(`POST ${target} → ${res.status} ${res.statusText}`);
  process.stdout.write(oneLine(res.text));
  process.exitCode = is2xx(res.status) ? 0 : 1;
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
