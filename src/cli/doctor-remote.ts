/**
 * `hookgate doctor`: the model providers and the channels, each built from its config section as the service builds
 * it and asked its own `check` (next to its send code, so the check and the sends read failures the same way).
 * Every call is bounded by CHECK_TIMEOUT_MS; `--offline` keeps the local part (the section builds, a command is on
 * PATH, a key file parses) and skips the calls.
 */
import { CHECK_TIMEOUT_MS, type CheckResult, checkFail, checkOk } from '../check.js';
import { createLogChannel } from '../channels/log.js';
import { createPlatformChannel, loadChannelPlugin } from '../channels/registry.js';
import type { Channel, ChannelContext } from '../channels/types.js';
import { createWebhookChannel } from '../channels/webhook.js';
import type { Config } from '../config/load.js';
import { CORE_CHANNELS } from '../config/schema/channels.js';
import { createProvider } from '../providers/registry.js';
import { firstLine } from '../text-safe.js';
import { type Finding, fromCheck } from './doctor-format.js';

/** The provider APIs and platforms a check of which goes over the network. */
const LOCAL_PROVIDER_APIS = new Set(['command', 'echo']);
const LOCAL_CHANNELS = new Set(['webhook', 'log']);

const OFFLINE = checkOk('not called (--offline)');

/** Runs `run` with a signal that aborts after CHECK_TIMEOUT_MS; then the check fails, naming the limit. */
export async function bounded(run: (signal: AbortSignal) => Promise<CheckResult>): Promise<CheckResult> {
  const ac = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<CheckResult>((resolve) => {
    timer = setTimeout(() => {
      ac.abort();
      resolve(
        checkFail(
          `no answer within ${CHECK_TIMEOUT_MS / 1000} s`,
          'check the URL or host, and that the service there runs',
        ),
      );
    }, CHECK_TIMEOUT_MS);
  });
  try {
    return await Promise.race([
      run(ac.signal).catch((err: unknown) => checkFail(`the check failed: ${firstLine(err)}`)),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export async function checkProviders(config: Config, offline: boolean): Promise<Finding[]> {
  const entries = Object.entries(config.models.providers);
  return Promise.all(
    entries.map(async ([id, section]) => {
      const what = `models.providers.${id}`;
      if (offline && !LOCAL_PROVIDER_APIS.has(section.api)) return fromCheck(what, OFFLINE);
      const provider = createProvider(id, section);
      try {
        return fromCheck(
          what,
          provider.check ? await bounded((signal) => provider.check!(signal)) : checkOk('no check for this API'),
        );
      } finally {
        await provider.close?.();
      }
    }),
  );
}

/** Every configured channel and named account, then webhook, log and the plugins. */
export async function checkChannels(config: Config, offline: boolean): Promise<Finding[]> {
  const ctx: ChannelContext = { configDir: config.dir, logger: { info() {}, warn() {}, error() {} } };
  const jobs: Array<Promise<Finding>> = [];
  for (const name of CORE_CHANNELS) {
    const section = config.channels[name];
    if (!section) continue;
    const accounts: Array<[string, unknown]> = [
      [`channels.${name}`, section],
      ...Object.entries(section.accounts).map(([id, a]): [string, unknown] => [`channels.${name}.accounts.${id}`, a]),
    ];
    for (const [what, cfg] of accounts)
      jobs.push(checkOne(what, () => createPlatformChannel(name, cfg, ctx), offline && !LOCAL_CHANNELS.has(name)));
  }
  if (config.channels.webhook)
    jobs.push(checkOne('channels.webhook', async () => createWebhookChannel(config.channels.webhook!, ctx), false));
  jobs.push(checkOne('channels.log', async () => createLogChannel(config.channels.log, ctx), false));
  config.channels.plugins.forEach((entry, i) => {
    // A plugin's own check may call out: it counts as network.
    jobs.push(
      checkOne(`channels.plugins[${i}]`, () => loadChannelPlugin(entry, ctx, `channels.plugins[${i}]`), offline),
    );
  });
  return Promise.all(jobs);
}

/** Builds the channel (a bad key file fails here, as at start), asks its check, closes it. */
async function checkOne(what: string, build: () => Promise<Channel>, offline: boolean): Promise<Finding> {
  let channel: Channel;
  try {
    channel = await build();
  } catch (err) {
    return fromCheck(what, checkFail(firstLine(err), 'fix this section: `hookgate serve` fails the same way'));
  }
  try {
    if (offline) return fromCheck(what, OFFLINE);
    if (!channel.check) return fromCheck(what, checkOk('loaded; it has no check'));
    return fromCheck(what, await bounded((signal) => channel.check!(signal)));
  } finally {
    await channel.close?.().catch(() => undefined);
  }
}
