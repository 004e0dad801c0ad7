/**
 * `hookgate doctor`: checks the config, the store, the port, each model provider and each channel's credentials,
 * and prints one line per finding with what to change. Exit 1 when anything failed (warnings do not fail).
 * It reads; it never creates a store, a token or a file.
 */
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Command } from 'commander';
import { CHECK_TIMEOUT_MS } from '../check.js';
import { type Config, type ConfigLocation, loadStorageConfig, locateConfigFile } from '../config/load.js';
import { ConfigError } from '../errors.js';
import { isLoopbackHost } from '../http-util.js';
import { request } from '../http/client.js';
import { asRecord } from '../http/token.js';
import { firstLine, logPath } from '../text-safe.js';
import { fullConfig, UNSTARTED_DEFAULT_NOTE } from './context.js';
import { applyEnvFile, checkAccess, envFileFor } from './doctor-access.js';
import { type Finding, finding, formatFindings } from './doctor-format.js';
import { probeNative, nativeFinding } from './doctor-native.js';
import { checkChannels, checkProviders } from './doctor-remote.js';
import { printJson } from './format.js';
import { configOption, jsonOption } from './options.js';
import { checkStoreConnection } from './store-connect.js';

export interface DoctorOptions {
  config?: string;
  json?: boolean;
  offline?: boolean;
  serviceUser?: string;
  envFile?: string;
}

export function addDoctorCommand(program: Command): void {
  program
    .command('doctor')
    .description(
      "check the config, the store, the port, each provider and each channel's credentials; exit 1 naming each problem",
    )
    .addOption(configOption())
    .addOption(jsonOption())
    .option('--offline', 'skip every network call (providers, channels, the port probe of a remote bind)')
    .option(
      '--service-user <name>',
      "also check that this user can read the config and its secret files (a name the system does not know: the unit's DynamicUser=)",
    )
    .option(
      '--env-file <file>',
      'the environment file to check (default: hookgate.env next to the config, when there is one)',
    )
    .action(async (opts: DoctorOptions) => {
      const findings = await runDoctor(opts);
      if (opts.json) printJson(findings);
      else process.stdout.write(formatFindings(findings));
      process.exitCode = findings.some((f) => f.status === 'fail') ? 1 : 0;
      // A socket a check left behind (a keep-alive, a slow QUIT) must not keep the command running.
      setTimeout(() => process.exit(), 1000).unref();
    });
}

export async function runDoctor(opts: DoctorOptions): Promise<Finding[]> {
  const offline = opts.offline === true;
  const location = locateConfigFile(opts.config);
  const out: Finding[] = [];
  const envApplied = location.file ? applyEnvFile(envFileFor(location.file, opts.envFile)) : undefined;
  if (envApplied) out.push(envApplied);
  const config = loadForDoctor(location, opts.config, out);
  if (location.file && existsSync(location.file))
    out.push(...checkAccess({ configFile: location.file, envFile: opts.envFile, serviceUser: opts.serviceUser }));
  out.push(nativeFinding(probeNative(), storageDriver(location, config) === 'sqlite'));
  if (config) {
    out.push(...(await checkStoreConnection(config.storage, config.dir, location.file !== undefined)));
  } else {
    // An invalid config still names its store: check it from the storage section alone when that part is readable.
    try {
      const storage = loadStorageConfig(location.file);
      out.push(...(await checkStoreConnection(storage.storage, storage.dir, location.file !== undefined)));
    } catch {
      out.push(finding('fail', 'store', "not checked: the config's storage section cannot be read (see above)"));
    }
  }
  if (!config) {
    out.push(
      finding('fail', 'port', 'not checked: the config is not valid'),
      finding('fail', 'providers, channels', 'not checked: the config is not valid'),
    );
    return out;
  }
  out.push(await checkPort(config, offline));
  const [providers, channels] = await Promise.all([checkProviders(config, offline), checkChannels(config, offline)]);
  out.push(...providers, ...channels);
  return out;
}

/** The store's driver, from the whole config or, when it is invalid, from its storage section; sqlite when unknown. */
function storageDriver(location: ConfigLocation, config: Config | undefined): string {
  if (config) return config.storage.driver;
  try {
    return loadStorageConfig(location.file).storage.driver;
  } catch {
    return 'sqlite';
  }
}

/** The config as `serve` would load it, its problems and warnings as findings; undefined when it cannot be used. */
function loadForDoctor(location: ConfigLocation, flag: string | undefined, out: Finding[]): Config | undefined {
  if (location.file && !existsSync(location.file)) {
    out.push(
      finding(
        'fail',
        'config',
        `${logPath(location.file, 300)} (from ${location.from}) does not exist`,
        'give an existing file, or `hookgate init` to write one',
      ),
    );
    return undefined;
  }
  const where = location.file
    ? `${logPath(location.file, 300)} (from ${location.from})`
    : `no config file: the embedded default (looked for ${location.looked.join(', ')})`;
  let config: Config;
  let unstarted: boolean | undefined;
  try {
    ({ config, unstarted } = fullConfig(flag));
  } catch (err) {
    if (!(err instanceof ConfigError)) {
      out.push(finding('fail', 'config', `${where}: ${firstLine(err)}`));
      return undefined;
    }
    out.push(finding('fail', 'config', `${where}: ${err.issues.length} problem${err.issues.length > 1 ? 's' : ''}`));
    // The loader's own messages: every problem by key path, as `config check` lists them.
    for (const i of err.issues)
      out.push(finding('fail', 'config', `${i.path || '(root)'}: ${i.message}`, `fix ${i.path || 'the file'}`));
    return undefined;
  }
  out.push(finding('ok', 'config', `${where}: valid`));
  for (const w of config.warnings) out.push(finding('warn', 'config', w));
  if (unstarted) out.push(finding('ok', 'config', UNSTARTED_DEFAULT_NOTE));
  return config;
}

/**
 * The gateway's address: free to listen on, or taken — by a hookgate (its hooks path answers JSON with a `code`),
 * which is fine, or by something else, which `serve` would fail on.
 */
async function checkPort(config: Config, offline: boolean): Promise<Finding> {
  const { bind, port } = config.gateway;
  const at = `${bind.includes(':') ? `[${bind}]` : bind}:${port}`;
  if (port === 0) return finding('ok', 'port', 'gateway.port is 0: the system picks a free port at each start');
  const code = await tryListen(bind, port);
  if (code === undefined) return finding('ok', 'port', `${at} is free`);
  if (code === 'EADDRNOTAVAIL')
    return finding(
      'fail',
      'port',
      `${bind} is not an address of this host`,
      'set gateway.bind to 127.0.0.1 (behind a reverse proxy) or to an address of this host',
    );
  if (code === 'EACCES')
    return finding('fail', 'port', `${at}: listening needs privileges (EACCES)`, 'use a port above 1023');
  if (code !== 'EADDRINUSE') return finding('fail', 'port', `${at}: cannot listen (${code})`);
  const host = bind === '0.0.0.0' ? '127.0.0.1' : bind === '::' ? '[::1]' : bind.includes(':') ? `[${bind}]` : bind;
  if (offline && !isLoopbackHost(host)) return finding('warn', 'port', `${at} is in use; not probed (--offline)`);
  return (await answersLikeHookgate(`http://${host}:${port}${config.hooks.path}/`))
    ? finding('ok', 'port', `${at} is in use: hookgate is running there`)
    : finding('fail', 'port', `${at} is in use: something else listens on it`, 'stop it, or change gateway.port');
}

function tryListen(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}

/** hookgate answers a GET below its hooks path with JSON `{ ok: false, error, code }` (404 or 405). */
async function answersLikeHookgate(url: string): Promise<boolean> {
  const res = await request(url, {}, { timeoutMs: CHECK_TIMEOUT_MS });
  const body = res.kind === 'response' ? asRecord(res.json) : {};
  return body.ok === false && typeof body.code === 'string';
}
