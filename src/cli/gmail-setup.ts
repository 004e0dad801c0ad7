/**
 * `hookgate gmail setup`: the Pub/Sub side of Gmail push (topic, Gmail's right to publish, the push subscription with
 * its OIDC identity and audience) through the REST API, then `hooks.gmail` written into the config. Every step is
 * idempotent, so a run that failed half-way is simply run again. `--print` shows the same as gcloud commands instead.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { locateConfigFile, parseConfig } from '../config/load.js';
import { CliError, ConfigError } from '../errors.js';
import { anyEnv, hooksPathOf, rawConfig, requireConfigFile } from './config-file.js';
import { type GmailBlock, blockValue, gmailBlockText, insertGmail, type Secret } from './gmail-config-edit.js';
import { replaceFileKeepingMode } from './json5-edit.js';
import {
  adminAccessToken,
  createPushSubscription,
  createTopic,
  GMAIL_PUBLISHER,
  grantPublisher,
  PUBLISHER_ROLE,
  PUBSUB_URL,
  type StepOutcome,
} from './gmail-google.js';
import { printJson } from './format.js';

export interface SetupOptions {
  account: string;
  project: string;
  pushEndpoint: string;
  serviceAccount: string;
  topic: string;
  subscription: string;
  pushPath: string;
  audience?: string;
  labels: string;
  clientId?: string;
  clientSecret?: string;
  refreshToken?: string;
  accessToken?: string;
  credentials?: string;
  pubsubUrl?: string;
  tokenUrl?: string;
  print?: boolean;
  writeConfig: boolean;
  json?: boolean;
  config?: string;
}

/** The environment variables the written config names for the OAuth client, unless values were passed. */
export const OAUTH_ENV = {
  clientId: 'GMAIL_CLIENT_ID',
  clientSecret: 'GMAIL_CLIENT_SECRET',
  refreshToken: 'GMAIL_REFRESH_TOKEN',
} as const;

const RESOURCE_ID = /^[A-Za-z][\w.~+%-]{2,254}$/;
const PROJECT_ID = /^[a-z][a-z0-9-]{4,28}[a-z0-9]$|^[a-z0-9.-]+:[a-z][a-z0-9-]{4,28}[a-z0-9]$/;

interface Plan {
  block: GmailBlock;
  pushEndpoint: string;
  audience: string;
  /** The config file to write, when writing. */
  file: string | undefined;
}

export async function gmailSetup(o: SetupOptions, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const plan = makePlan(o);
  if (o.print) return printPlan(o, plan);
  // The config is checked before anything is created in Google Cloud: a refusal costs nothing to fix and re-run.
  const edit = o.writeConfig ? planConfigEdit(plan) : undefined;
  const credentials = await adminAccessToken({
    accessToken: o.accessToken,
    credentialsFile: o.credentials,
    tokenUrl: o.tokenUrl || env.HOOKGATE_GOOGLE_TOKEN_URL || undefined,
    env,
  });
  const target = {
    baseUrl: o.pubsubUrl || env.HOOKGATE_PUBSUB_URL || PUBSUB_URL,
    token: credentials.token,
    project: o.project,
  };
  const steps: Array<{ step: string; resource: string; outcome: StepOutcome; note?: string }> = [];
  const say = (line: string) => !o.json && process.stdout.write(`${line}\n`);
  say(`Google credentials: ${credentials.from}`);

  const topicName = `projects/${o.project}/topics/${o.topic}`;
  steps.push({ step: 'topic', resource: topicName, outcome: await createTopic(target, o.topic) });
  say(`topic ${topicName}: ${steps.at(-1)!.outcome}`);
  steps.push({
    step: 'publisher',
    resource: `${PUBLISHER_ROLE} for ${GMAIL_PUBLISHER}`,
    outcome: await grantPublisher(target, o.topic),
  });
  say(
    `Gmail may publish to it (${PUBLISHER_ROLE} for ${GMAIL_PUBLISHER}): ${steps.at(-1)!.outcome === 'added' ? 'granted' : 'already granted'}`,
  );
  const sub = await createPushSubscription(target, {
    name: o.subscription,
    topic: o.topic,
    pushEndpoint: plan.pushEndpoint,
    serviceAccountEmail: o.serviceAccount,
    audience: plan.audience,
  });
  const subName = `projects/${o.project}/subscriptions/${o.subscription}`;
  steps.push({
    step: 'subscription',
    resource: subName,
    outcome: sub.outcome,
    ...(sub.differences.length ? { note: sub.differences.join('; ') } : {}),
  });
  say(
    `push subscription ${subName}: ${sub.outcome} → ${plan.pushEndpoint} (OIDC token of ${o.serviceAccount}, audience ${plan.audience})`,
  );
  if (sub.differences.length) {
    process.exitCode = 1;
    const fix = `gcloud pubsub subscriptions modify-push-config ${sh(o.subscription)} --project=${sh(o.project)} --push-endpoint=${sh(plan.pushEndpoint)} --push-auth-service-account=${sh(o.serviceAccount)} --push-auth-token-audience=${sh(plan.audience)}`;
    process.stderr.write(
      `hookgate: the existing subscription differs: ${sub.differences.join('; ')}.\nhookgate: it was left as it is; to make it push to hookgate: ${fix}\n`,
    );
  }

  const written = edit ? writeEdit(edit) : undefined;
  if (written) say(`config ${plan.file}: ${written}`);
  else if (!o.writeConfig)
    say(
      `config: not written (--no-write-config); add this to hooks:\n${gmailBlockText(plan.block, '    ', plan.pushEndpoint, today())}`,
    );
  const next = nextSteps(plan);
  if (o.json)
    return printJson({
      ok: process.exitCode !== 1,
      credentials: credentials.from,
      steps,
      config: { file: plan.file ?? null, written: written ?? null },
      gmail: blockValue(plan.block),
      pushEndpoint: plan.pushEndpoint,
      next,
    });
  say(`next:\n${next.map((n) => `  - ${n}`).join('\n')}`);
}

function makePlan(o: SetupOptions): Plan {
  if (!/^[^@\s]+@[^@\s]+$/.test(o.account))
    throw new CliError(
      'cli_usage',
      `--account: expected the mailbox's address (you@example.com), got ${JSON.stringify(o.account)}`,
    );
  if (!PROJECT_ID.test(o.project))
    throw new CliError(
      'cli_usage',
      `--project: expected a project id (6-30 lower-case letters, digits and hyphens, like my-project-123), got ${JSON.stringify(o.project)}`,
    );
  for (const [flag, v] of [
    ['--topic', o.topic],
    ['--subscription', o.subscription],
  ] as const) {
    if (!RESOURCE_ID.test(v) || v.toLowerCase().startsWith('goog'))
      throw new CliError(
        'cli_usage',
        `${flag}: a Pub/Sub id is 3-255 letters, digits and - _ . ~ + %, starts with a letter and not with "goog"; got ${JSON.stringify(v)}`,
      );
  }
  if (!/^[^@\s]+@[^@\s]+\.gserviceaccount\.com$/.test(o.serviceAccount)) {
    throw new CliError(
      'cli_usage',
      `--service-account: expected a service account's address (NAME@${o.project}.iam.gserviceaccount.com), got ${JSON.stringify(o.serviceAccount)}`,
    );
  }
  const pushPath = o.pushPath.trim().replace(/^\/+|\/+$/g, '');
  if (!/^[\w.~-]+(\/[\w.~-]+)*$/.test(pushPath))
    throw new CliError(
      'cli_usage',
      `--push-path: expected a sub-path like gmail-push, got ${JSON.stringify(o.pushPath)}`,
    );
  if (['gmail', 'wake', 'agent'].includes(pushPath))
    throw new CliError(
      'cli_usage',
      `--push-path: ${pushPath} is taken (${pushPath === 'gmail' ? "the gmail preset's path" : 'a built-in hook'}); keep the default gmail-push`,
    );
  const labels = o.labels
    .split(',')
    .map((l) => l.trim())
    .filter(Boolean);
  if (labels.length === 0)
    throw new CliError('cli_usage', '--labels: name at least one label (INBOX, or a label id like Label_12)');

  const loc = locateConfigFile(o.config);
  const file =
    o.writeConfig && !o.print
      ? requireConfigFile(
          loc,
          'hooks.gmail',
          'or pass --config FILE, --no-write-config (Google only), or --print (nothing called).',
        )
      : loc.file && existsSync(loc.file)
        ? loc.file
        : undefined;
  const hooksPath = file ? hooksPathOf(rawConfig(file), file) : '/hooks';
  let url: URL;
  try {
    url = new URL(o.pushEndpoint);
  } catch {
    throw new CliError(
      'cli_usage',
      `--push-endpoint: expected a public https URL, got ${JSON.stringify(o.pushEndpoint)}`,
    );
  }
  if (url.protocol !== 'https:')
    throw new CliError(
      'cli_usage',
      `--push-endpoint: Pub/Sub pushes to https URLs only (a reverse proxy or tunnel in front of hookgate: docs/gmail.md), got ${url.protocol}`,
    );
  // Just an origin: hookgate's own path is appended, as the proxy is expected to pass paths through unchanged.
  const pushEndpoint = url.pathname === '/' && !url.search ? `${url.origin}${hooksPath}/${pushPath}` : url.href;
  const audience = o.audience?.trim() || pushEndpoint;
  const ref = (value: string | undefined, name: string): Secret => (value?.trim() ? value.trim() : { env: name });
  const block: GmailBlock = {
    account: o.account,
    project: o.project,
    topic: o.topic,
    subscription: o.subscription,
    pushPath,
    audience,
    serviceAccountEmail: o.serviceAccount,
    labels,
    includeBody: true,
    maxBodyChars: 20000,
    oauth: {
      clientId: ref(o.clientId, OAUTH_ENV.clientId),
      clientSecret: ref(o.clientSecret, OAUTH_ENV.clientSecret),
      refreshToken: ref(o.refreshToken, OAUTH_ENV.refreshToken),
    },
    renewEveryHours: 24,
  };
  return { block, pushEndpoint, audience, file };
}

interface ConfigEdit {
  file: string;
  text: string | undefined;
  how: string;
}

/**
 * The new config text, checked: the block must be valid where it lands (its secrets' variables count as set, since
 * they are the service's business, not this shell's). Problems elsewhere in the file are not this command's.
 */
function planConfigEdit(plan: Plan): ConfigEdit {
  const file = plan.file!;
  const text = readFileSync(file, 'utf8');
  const value = blockValue(plan.block);
  const result = insertGmail(text, value, (indent) => gmailBlockText(plan.block, indent, plan.pushEndpoint, today()));
  if (result.kind === 'same')
    return { file, text: undefined, how: 'hooks.gmail already holds these values; left as it is' };
  if (result.kind === 'refused') {
    throw new CliError(
      'cli_usage',
      `not writing ${file}: ${result.reason}. Nothing was created in Google Cloud. Replace its gmail section with this block, then run setup again with --no-write-config:\n${gmailBlockText(plan.block, '    ', plan.pushEndpoint, today())}`,
    );
  }
  try {
    parseConfig(result.text, file, dirname(file), { env: anyEnv() });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    const mine = err.issues.filter(
      (i) => i.path === 'hooks.gmail' || i.path.startsWith('hooks.gmail.') || i.path.startsWith('hooks.gmail['),
    );
    if (mine.length) {
      throw new CliError(
        'cli_usage',
        `not writing ${file}: the new hooks.gmail would be invalid (nothing was created in Google Cloud):\n${mine.map((i) => `  ${i.path}: ${i.message}`).join('\n')}`,
      );
    }
  }
  return { file, text: result.text, how: `hooks.gmail ${result.how}` };
}

/** Written through a temporary file and a rename, keeping the file's mode (it holds secrets). */
function writeEdit(edit: ConfigEdit): string {
  if (edit.text === undefined) return edit.how;
  replaceFileKeepingMode(edit.file, edit.text);
  return edit.how;
}

function nextSteps(plan: Plan): string[] {
  const envs = Object.values(plan.block.oauth).flatMap((s) => (typeof s === 'string' ? [] : [s.env]));
  return [
    ...(envs.length
      ? [
          `set ${envs.join(', ')} where hookgate serve runs (docs/gmail.md, step 3: the OAuth client and its refresh token)`,
        ]
      : []),
    `make ${plan.pushEndpoint} reach hookgate (reverse proxy or tunnel: docs/gmail.md, step 4)`,
    '`hookgate config check`, then start hookgate (or send SIGHUP to a running one): it calls users.watch at start',
    '`hookgate gmail status` shows the watch, the last push and the messages fetched',
  ];
}

const today = () => new Date().toISOString().slice(0, 10);

/** A shell word: as it is when safe, else single-quoted. */
export const sh = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

function printPlan(o: SetupOptions, plan: Plan): void {
  const p = `--project=${sh(o.project)}`;
  const commands = [
    ['gcloud services enable pubsub.googleapis.com gmail.googleapis.com', p],
    [`gcloud pubsub topics create ${sh(o.topic)}`, p],
    [
      `gcloud pubsub topics add-iam-policy-binding ${sh(o.topic)}`,
      p,
      `--member=${GMAIL_PUBLISHER}`,
      `--role=${PUBLISHER_ROLE}`,
    ],
    [
      `gcloud pubsub subscriptions create ${sh(o.subscription)}`,
      p,
      `--topic=${sh(o.topic)}`,
      `--push-endpoint=${sh(plan.pushEndpoint)}`,
      `--push-auth-service-account=${sh(o.serviceAccount)}`,
      `--push-auth-token-audience=${sh(plan.audience)}`,
      '--ack-deadline=60',
    ],
  ];
  if (o.json)
    return printJson({
      commands: commands.map((c) => c.join(' ')),
      gmail: blockValue(plan.block),
      pushEndpoint: plan.pushEndpoint,
      config: plan.file ?? null,
    });
  const where = plan.file ? `into hooks of ${plan.file}` : 'into hooks of your config';
  process.stdout.write(
    [
      '# hookgate gmail setup --print: the same set-up as gcloud commands. Nothing was called, nothing written.',
      `# The service account ${o.serviceAccount} must exist, and you need roles/iam.serviceAccountUser on it (docs/gmail.md, step 5).`,
      ...commands.map((c) => c.join(c.length > 2 ? ' \\\n    ' : ' ')),
      '',
      `# Then paste this ${where}:`,
      gmailBlockText(plan.block, '    ', plan.pushEndpoint, today()),
    ].join('\n'),
  );
}
