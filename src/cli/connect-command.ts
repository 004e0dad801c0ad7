/**
 * `hookgate connect <sender>`: a sender set up in one command, from the sender presets' catalogue
 * (hooks/mappings/presets/index.ts): its `hooks.presets` entry written into the config file (connect-edit.ts), its
 * secret made or taken in (connect-secret.ts), then the URL to paste, the secret where the user must paste it, and
 * the sender-side steps. `--test` sends the preset's sample event, signed as the sender signs it, through the running
 * service and shows what the agent receives; `--list` prints the catalogue. A new preset needs nothing here.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { type Command, Option } from 'commander';
import { locateConfigFile, parseConfig } from '../config/load.js';
import { normalizeMatchPath, SENDER_PRESETS } from '../config/schema/hooks.js';
import { CliError, ConfigError } from '../errors.js';
import { is2xx, request } from '../http/client.js';
import { senderEntries, senderPresets } from '../hooks/mappings/presets/index.js';
import { compileSender, type SenderPreset, takenEvents } from '../hooks/mappings/presets/sender.js';
import { signedQuery, signRequest } from '../hooks/mappings/signatures.js';
import { anyEnv, dataDirOf, listenerUrlOf, rawConfig, requireConfigFile } from './config-file.js';
import { addPresetEntry, connectComment, type ConnectEntry, entryText, occupantOf } from './connect-edit.js';
import { type ConnectSecret, obtainSecret, secretFileFor, type SecretOptions, writeSecret } from './connect-secret.js';
import { fullConfig, listenerUrl } from './context.js';
import { sh } from './gmail-setup.js';
import { replaceFileKeepingMode } from './json5-edit.js';
import { describe, resolveLocally } from './mappings-command.js';
import { configOption } from './options.js';
import { oneLine } from './send.js';

interface ConnectOpts extends SecretOptions {
  list?: boolean;
  test?: boolean;
  path?: string;
  events?: string;
  action?: 'agent' | 'wake';
  channel?: string;
  to?: string;
  force?: boolean;
  publicUrl?: string;
  url?: string;
  config?: string;
}

export function addConnectCommand(program: Command): void {
  program
    .command('connect')
    .description(
      "set a sender up in one command: its hooks.presets entry and secret, then the URL and the steps on the sender's side; " +
        '--test sends it a sample event, --list shows the senders',
    )
    .argument('[sender]', 'the sender, by its catalogue name (hookgate connect --list)')
    .option('--list', 'print the senders: name, title, who chooses the secret, the event types worded')
    .option(
      '--test',
      "send the sender's sample event (signed as it signs) through the running service; print what the agent gets",
    )
    .option('--path <path>', "the sub-path under hooks.path (default: the sender's name)")
    .option('--events <list>', 'comma-separated event types that make a run (default: those the preset words)')
    .addOption(
      new Option('--action <action>', 'agent: a run per event (default); wake: an event for the main session').choices([
        'agent',
        'wake',
      ]),
    )
    .option('--channel <channel>', "where the agent replies go (default: the main session's last channel)")
    .option('--to <to>', 'the recipient on that channel')
    .option(
      '--secret-file <file>',
      'a sender that shows its secret (Stripe, Slack…): read it from FILE (-: from stdin)',
    )
    .option(
      '--secret-env <name>',
      'reference the secret as this environment variable of the service instead of storing it',
    )
    .option(
      '--public-url <url>',
      'the public https address in front of hookgate (a proxy or tunnel), to print the exact URL to paste',
    )
    .option('-f, --force', 'replace the preset entry already on the path')
    .addOption(
      new Option('--url <url>', "--test: the service's base URL (default: from gateway.bind and gateway.port)"),
    )
    .addOption(configOption())
    .action((sender: string | undefined, o: ConnectOpts) => connect(sender, o));
}

async function connect(name: string | undefined, o: ConnectOpts): Promise<void> {
  if (o.list) return printList();
  const preset = senderPresets().find((p) => p.name === name);
  if (!preset) {
    const known = senderPresets().map((p) => `  ${p.name.padEnd(20)} ${p.title}`);
    const what = name === undefined ? 'name the sender to connect' : `unknown sender ${JSON.stringify(name)}`;
    throw new CliError(
      name === undefined ? 'cli_usage' : 'cli_not_found',
      [`${what}; the senders are:`, ...known].join('\n'),
    );
  }
  if (o.test) return testSender(preset, o);
  return setUp(preset, o);
}

/** The catalogue: name, title, who chooses the secret, the event types worded. */
function printList(): void {
  const lines: string[] = [];
  for (const p of senderPresets()) {
    const worded = Object.keys(p.messages);
    const secret =
      p.setup.secret === 'generate'
        ? `hookgate makes it; you paste it into ${p.title}`
        : `${p.title} shows it; you give it to hookgate`;
    const events = worded.length ? worded.join(', ') : 'none worded on their own: one message for every event type';
    const defaults = p.defaultEvents ? ` (default events: ${p.defaultEvents.join(', ')})` : '';
    lines.push(`${p.name.padEnd(20)} ${p.title}`, `  secret: ${secret}`, `  events: ${events}${defaults}`);
  }
  process.stdout.write(`${lines.join('\n')}\n\nhookgate connect <name> sets one up (docs/senders.md)\n`);
}

const PATH_RE = /^[\w.~-]+(\/[\w.~-]+)*$/;

/** A sender whose signature covers the public URL it calls (Twilio): its entry names that URL (`url`). */
const signsUrl = (preset: SenderPreset) => SENDER_PRESETS[preset.name] === 'twilio';

function entryOf(
  preset: SenderPreset,
  o: ConnectOpts,
  path: string,
  secret: ConnectEntry['secret'],
  url?: string,
): ConnectEntry {
  const events = o.events
    ?.split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  if (events?.length === 0)
    throw new CliError('cli_usage', '--events: name at least one event type (or * for every one)');
  if (o.to !== undefined && o.channel === undefined) {
    throw new CliError('cli_usage', '--to needs --channel: the recipient is on that channel');
  }
  return { use: preset.name, path, secret, events, action: o.action, channel: o.channel, to: o.to, url };
}

async function setUp(preset: SenderPreset, o: ConnectOpts): Promise<void> {
  const file = requireConfigFile(locateConfigFile(o.config), 'hooks.presets');
  const configDir = dirname(file);
  const raw = rawConfig(file);
  const path = normalizeMatchPath(o.path ?? preset.name);
  if (!PATH_RE.test(path)) {
    throw new CliError(
      'cli_usage',
      `--path: expected a sub-path like ${preset.name} or ci/${preset.name}, got ${JSON.stringify(o.path)}`,
    );
  }
  if (path === 'wake' || path === 'agent')
    throw new CliError('cli_usage', `--path: ${path} is a built-in hook; choose another path`);
  entryOf(preset, o, path, ''); // the options, checked before a secret is asked for
  if (signsUrl(preset) && o.publicUrl === undefined) {
    const pass = 'pass it with --public-url https://hooks.example.com. Nothing was written.';
    throw new CliError('cli_usage', `${preset.title} signs the public URL it calls, which its entry names: ${pass}`);
  }

  const occupant = occupantOf(raw, path);
  if (occupant && !(o.force && occupant.kind === 'preset')) {
    const how =
      occupant.kind !== 'preset'
        ? `--force replaces a preset entry only; remove ${occupant.at} by hand, or choose another --path`
        : `pass --force to replace that entry, or --path to connect ${preset.title} on another path`;
    throw new CliError(
      'cli_usage',
      `not writing ${file}: "${path}" is already taken by ${occupant.at}; ${how}. Nothing was written.`,
    );
  }

  const secret = await obtainSecret(preset, o, configDir, secretFileFor(dataDirOf(raw, configDir), path));
  const text = readFileSync(file, 'utf8');
  const comment = connectComment(preset.title, preset.name, new Date());
  const replace = occupant?.kind === 'preset' ? occupant.index : undefined;
  const url = signsUrl(preset) ? publicUrl(o, raw, file, path).url : undefined;
  const edit = addPresetEntry(text, entryText(entryOf(preset, o, path, secret.ref, url)), comment, replace);
  if (edit.kind === 'refused')
    throw new CliError('cli_usage', `not writing ${file}: ${edit.reason}. Nothing was written.`);
  // Checked with the value itself in place of the reference: a secret its scheme refuses (a whsec_ that is not base64) is caught now.
  const check = addPresetEntry(
    text,
    entryText(entryOf(preset, o, path, secret.value ?? secret.ref, url)),
    comment,
    replace,
  );
  if (check.kind === 'edited') checkEntry(check.text, file, edit.index);
  writeSecret(secret);
  replaceFileKeepingMode(file, edit.text);
  printSetUp(preset, o, { file, raw, path, secret, how: edit.how });
}

/** The new entry must be valid where it lands; problems elsewhere in the file are not this command's. */
function checkEntry(text: string, file: string, index: number): void {
  try {
    parseConfig(text, file, dirname(file), { env: anyEnv() });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    const at = `hooks.presets[${index}]`;
    const mine = err.issues.filter((i) => i.path === at || i.path.startsWith(`${at}.`) || i.path.startsWith(`${at}[`));
    if (mine.length) {
      const problems = mine.map((i) => `  ${i.path}: ${i.message}`).join('\n');
      throw new CliError(
        'cli_usage',
        `not writing ${file}: the new ${at} would be invalid (nothing was written):\n${problems}`,
      );
    }
  }
}

interface Done {
  file: string;
  raw: Record<string, unknown>;
  path: string;
  secret: ConnectSecret;
  how: string;
}

function printSetUp(preset: SenderPreset, o: ConnectOpts, d: Done): void {
  const { secret } = d;
  const where = 'file' in secret.ref ? secret.ref.file : `$${secret.ref.env}`;
  const title = preset.title;
  const kept = 'env' in secret.ref ? `from ${where}` : `in ${where}, mode 0600`;
  const out = [`${d.file}: ${d.how} (${preset.name} on "${d.path}", its secret ${kept})`, ''];

  const { url, note } = publicUrl(o, d.raw, d.file, d.path);
  out.push(`URL to paste into ${title}:`, `  ${url}`, ...(note ? [`  ${note}`] : []), '');

  if (secret.generated) {
    const once = `Secret: paste it into ${title} (its secret field). It is shown only this once; hookgate keeps it in ${where}:`;
    out.push(once, `  ${secret.value}`, '');
  } else if (secret.kept) {
    out.push(
      `Secret: kept the one already in ${where} (${title} has it if you pasted it before; \`cat ${sh(where)}\` shows it).`,
      '',
    );
  } else if ('env' in secret.ref && preset.setup.secret === 'generate') {
    const set = `Secret: set ${secret.ref.env} where hookgate serve runs to a strong random value (\`hookgate token\` prints one)`;
    out.push(`${set}, and paste the same value into ${title}.`, '');
  } else if (secret.write && preset.setup.secret === 'generate') {
    out.push(`Secret: the one you gave, now in ${where}; paste the same value into ${title}.`, '');
  } else if ('env' in secret.ref) {
    out.push(`Secret: set ${secret.ref.env} where hookgate serve runs to the signing secret ${title} shows.`, '');
  }

  const events =
    o.events
      ?.split(',')
      .map((e) => e.trim())
      .filter(Boolean) ?? takenEvents(preset, {});
  const eventList = events.includes('*') ? 'every event type' : events.join(', ');
  const steps = preset.setup.steps.map(
    (s, i) => `  ${i + 1}. ${s.replaceAll('<url>', url).replaceAll('<events>', eventList)}`,
  );
  out.push(`On ${title}'s side:`, ...steps, '');

  const flag = o.config ? ` --config ${sh(o.config)}` : '';
  out.push(
    'Then:',
    '  - a running hookgate serve applies the change at once (it watches its config file);' +
      ` otherwise start it: hookgate serve --config ${sh(d.file)}`,
    `  - check it end to end: hookgate connect ${preset.name}${d.path !== preset.name ? ` --path ${sh(d.path)}` : ''} --test${flag}`,
  );
  process.stdout.write(`${out.join('\n')}\n`);
}

/** The URL the sender posts to: under --public-url, else the listener's own with a note on what a sender can reach. */
function publicUrl(
  o: ConnectOpts,
  raw: Record<string, unknown>,
  file: string,
  path: string,
): { url: string; note?: string } {
  const own = `${listenerUrlOf(raw, file)}/${path}`;
  if (o.publicUrl === undefined) {
    return {
      url: own,
      note:
        "This is hookgate's own listener: the sender needs a public HTTPS URL. Put a reverse proxy or a tunnel in front of hookgate " +
        'and paste its https address with the same path, or run this again with --public-url https://your.host to have it printed ' +
        '(docs/senders.md#a-public-https-url).',
    };
  }
  let u: URL;
  try {
    u = new URL(o.publicUrl);
  } catch {
    throw new CliError(
      'cli_usage',
      `--public-url: expected a URL like https://hooks.example.com, got ${JSON.stringify(o.publicUrl)}`,
    );
  }
  const hooksPath = new URL(own).pathname.slice(0, -(path.length + 1));
  // Just an origin: hookgate's own path is appended, as the proxy is expected to pass paths through unchanged.
  const url = u.pathname === '/' && !u.search ? `${u.origin}${hooksPath}/${path}` : u.href;
  return { url, note: u.protocol === 'https:' ? undefined : 'Most senders call https URLs only.' };
}

/** `--test`: the sample through the running service, then what the agent receives, rendered as `mappings test` does. */
async function testSender(preset: SenderPreset, o: ConnectOpts): Promise<void> {
  const { config, location } = fullConfig(o.config);
  const path = o.path === undefined ? undefined : normalizeMatchPath(o.path);
  const entry = senderEntries(config.hooks).find(
    (e) => e.use === preset.name && (path === undefined || e.path === path),
  );
  if (!entry) {
    const on = path === undefined ? '' : ` on "${path}"`;
    const of = location.file ?? 'the embedded default';
    const add = `\`hookgate connect ${preset.name}\` adds one`;
    throw new CliError('cli_not_found', `no ${preset.name} entry${on} in hooks.presets of ${of}: ${add}`);
  }
  // A sender that signs its send time in the body (Linear) gets a sample sent now, or its timestamp would be stale.
  const { body: sampleBody, sentAtField } = preset.sample;
  const body: Record<string, unknown> = sentAtField ? { ...sampleBody, [sentAtField]: Date.now() } : { ...sampleBody };
  const raw = Buffer.from(JSON.stringify(body));
  const headers: Record<string, string> = { 'content-type': 'application/json', ...preset.sample.headers };
  const base = o.url ? `${o.url.replace(/\/+$/, '')}${config.hooks.path}` : listenerUrl(config);
  const target = `${base}/${entry.path}${signedQuery(entry.signature, raw)}`;
  // A fresh idempotency key: a sample whose delivery id is in its body (Stripe's event id) is not a duplicate of the last test.
  const sent = {
    ...headers,
    ...signRequest(entry.signature, raw, Date.now()),
    'idempotency-key': `connect-test-${randomUUID()}`,
  };
  const res = await request(target, { method: 'POST', headers: sent, body: raw }, {});
  if (res.kind !== 'response') {
    const start = location.file ? `hookgate serve --config ${sh(location.file)}` : 'hookgate serve';
    const why = res.kind === 'network' ? res.code : res.kind;
    const how = `start it (${start}; from a checkout, npm start), then run this again`;
    throw new CliError('cli_unreachable', `hookgate is not running at ${base} (${why}): ${how}`);
  }
  const event = compileSender(preset, entry).events.of(body, headers);
  const sample = `${preset.title}'s sample${event ? ` ${event}` : ''} event`;
  process.stdout.write(`sent ${sample} to ${target}, signed as ${preset.title} signs it\n`);
  process.stdout.write(`answer: ${res.status} ${oneLine(res.text) || '\n'}`);
  if (!is2xx(res.status)) {
    process.exitCode = 1;
    const hint =
      res.status === 401
        ? 'the service does not take this secret: does it run with this config file and environment ' +
          '(a reload after an edit: SIGHUP, or its log says "config reloaded")?'
        : res.status === 404
          ? 'the service has no route on this path: is it running this config file (it applies an edited file at once; else restart it)?'
          : 'see the service log for this request';
    process.stdout.write(`${hint}\n`);
    return;
  }
  const { result, signer } = await resolveLocally(config, entry.path, raw, body, headers);
  if (result.kind === 'unmatched') {
    const taken = takenEvents(preset, entry).join(', ');
    const not = event ?? "the sample's event type";
    const as = `as that event from ${preset.title} would be`;
    process.stdout.write(`note: this entry takes ${taken}, not ${not}: the sample is answered and ignored, ${as}\n`);
  }
  const rendered = describe(result, entry.path, signer).join('\n');
  process.stdout.write(
    `what the agent receives (rendered here as the service renders it; hookgate mappings test):\n${rendered}\n`,
  );
}
