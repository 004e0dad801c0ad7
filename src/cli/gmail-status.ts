/**
 * `hookgate gmail status` (the store's view of the mailbox: watch expiry, history id, last push, messages fetched,
 * last error; it never creates a store) and `hookgate gmail stop` (Gmail's `users.stop` with the configured OAuth
 * client). Both read `hooks.gmail` alone from the config file, so a shell without the service's other secrets can
 * use them; `status` does not even need the OAuth secrets.
 */
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import JSON5 from 'json5';
import { interpolate } from '../config/interpolate.js';
import { type GmailConfig, gmailSchema } from '../config/schema/gmail.js';
import { normalizeHooksPath } from '../config/schema/hooks.js';
import { CliError, ConfigError, type ConfigIssue, keyPath } from '../errors.js';
import { announce, locate, withStore } from './context.js';
import { printJson, time } from './format.js';
import { gmailStop, refreshAccessToken } from './gmail-google.js';

interface GmailSection {
  file: string;
  gmail: GmailConfig & { account: string };
  /** `{hooks.path}/{pushPath}`: where Pub/Sub's pushes arrive. */
  pushPath: string;
}

/** `hooks.gmail` of the config file, validated on its own; `secrets: false` leaves `oauth` out (status needs none). */
function gmailSection(flag: string | undefined, secrets: boolean, env: NodeJS.ProcessEnv = process.env): GmailSection {
  const loc = locate(flag);
  if (!loc.file) {
    throw new CliError(
      'cli_config_missing',
      [
        'no config file, so no hooks.gmail. Looked for:',
        ...loc.looked.map((l) => `  ${l}`),
        '`hookgate gmail setup` writes hooks.gmail into a config file (`hookgate init` makes one).',
      ].join('\n'),
    );
  }
  const file = loc.file;
  let obj: { hooks?: { path?: unknown; gmail?: Record<string, unknown> } };
  try {
    obj = JSON5.parse(readFileSync(file, 'utf8')) as typeof obj;
  } catch (err) {
    throw new ConfigError([{ path: '', message: `not valid JSON5: ${(err as Error).message}` }], file);
  }
  const raw = obj?.hooks?.gmail;
  if (!raw || typeof raw !== 'object' || raw.account === undefined) {
    throw new CliError(
      'cli_not_found',
      `hooks.gmail.account is not set in ${file} (from ${loc.from}): \`hookgate gmail setup\` writes it (docs/gmail.md)`,
    );
  }
  const issues: ConfigIssue[] = [];
  const rest = { ...raw };
  delete rest.oauth;
  const section = interpolate(secrets ? raw : rest, env, dirname(file), issues, ['hooks', 'gmail']);
  if (issues.length) throw new ConfigError(issues, file);
  const parsed = gmailSchema.safeParse(section);
  if (!parsed.success)
    throw new ConfigError(
      parsed.error.issues.map((i) => ({ path: keyPath(['hooks', 'gmail', ...i.path]), message: i.message })),
      file,
    );
  if (secrets && !parsed.data.oauth) {
    throw new CliError(
      'cli_usage',
      `hooks.gmail.oauth is not set in ${file}: stop needs the mailbox's OAuth client and refresh token (docs/gmail.md, step 3)`,
    );
  }
  const hooksPath = typeof obj.hooks?.path === 'string' ? normalizeHooksPath(obj.hooks.path) : '/hooks';
  announce(`config ${file} (from ${loc.from}); hooks.gmail of ${parsed.data.account}`);
  return { file, gmail: parsed.data as GmailSection['gmail'], pushPath: `${hooksPath}/${parsed.data.pushPath}` };
}

const qualified = (kind: 'topics' | 'subscriptions', name: string | undefined, project: string | undefined) =>
  !name ? null : name.startsWith('projects/') ? name : project ? `projects/${project}/${kind}/${name}` : name;

/** "in 6 d 23 h" / "4 min ago". */
function relative(ms: number, now: number): string {
  const d = Math.abs(ms - now);
  const span =
    d >= 86_400_000
      ? `${Math.floor(d / 86_400_000)} d ${Math.floor((d % 86_400_000) / 3_600_000)} h`
      : d >= 3_600_000
        ? `${Math.floor(d / 3_600_000)} h ${Math.floor((d % 3_600_000) / 60_000)} min`
        : `${Math.floor(d / 60_000)} min`;
  return ms >= now ? `in ${span}` : `${span} ago`;
}

export async function gmailStatus(o: { config?: string; json?: boolean }): Promise<void> {
  const { file, gmail, pushPath } = gmailSection(o.config, false);
  const state = await withStore(o.config, (store) => store.readGmailStatus(gmail.account));
  const now = Date.now();
  const topic = qualified('topics', gmail.topic, gmail.project);
  const subscription = qualified('subscriptions', gmail.subscription, gmail.project);
  const watchExpired = state?.watchExpiration ? state.watchExpiration <= now : null;
  if (o.json)
    return printJson({
      account: gmail.account,
      config: file,
      topic,
      subscription,
      pushPath,
      labels: gmail.labels,
      watchExpired,
      state: state ?? null,
    });
  const lines = [
    `gmail ${gmail.account} (config ${file})`,
    `  topic:            ${topic ?? '-'}`,
    `  subscription:     ${subscription ?? '-'} → ${pushPath}`,
    `  labels:           ${gmail.labels.join(', ')}`,
  ];
  if (!state) {
    lines.push(
      '  state:            none yet: hookgate has not watched this mailbox. Start `hookgate serve` with this config: it calls users.watch at start.',
    );
  } else {
    const exp = state.watchExpiration;
    const watch = exp
      ? `${watchExpired ? 'EXPIRED' : 'expires'} ${time(exp)} (${relative(exp, now)})`
      : 'never set up (no successful users.watch yet)';
    lines.push(
      `  watch:            ${watch}${state.watchRenewedAt ? `; renewed ${time(state.watchRenewedAt)}` : ''}`,
      `  history id:       ${state.historyId ?? '-'}`,
      `  last push:        ${state.lastPushAt ? `${time(state.lastPushAt)} (${relative(state.lastPushAt, now)})` : 'none yet'}`,
      `  messages fetched: ${state.messagesFetched}   pending pushes: ${state.pendingPushes}`,
      `  last error:       ${state.lastError ? `${state.lastError} (${time(state.lastErrorAt)})` : 'none'}`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

export async function gmailStopCommand(o: { config?: string; json?: boolean }): Promise<void> {
  const { gmail } = gmailSection(o.config, true);
  const oauth = gmail.oauth!;
  const token = await refreshAccessToken({
    tokenUrl: gmail.tokenUrl,
    clientId: oauth.clientId,
    clientSecret: oauth.clientSecret,
    refreshToken: oauth.refreshToken,
  });
  await gmailStop(gmail.gmailApiBaseUrl, token);
  const note = `a running hookgate watches again at its next start or renewal (every ${gmail.renewEveryHours} h): to keep it stopped, remove hooks.gmail from the config (or stop hookgate) too`;
  if (o.json) return printJson({ ok: true, account: gmail.account, stopped: true, note });
  process.stdout.write(
    `stopped the Gmail watch of ${gmail.account} (users.stop): Gmail sends no more notifications to ${qualified('topics', gmail.topic, gmail.project) ?? 'the topic'}\nnote: ${note}\n`,
  );
}
