/**
 * Runs a private ngIRCd (Debian package `ngircd`) for IRC tests: its own config in a temp dir, a free port on
 * 127.0.0.1, foreground mode (-n), its own PID file — so it never clashes with a system ngircd service — plus an
 * optional TLS port with a self-signed certificate made by `openssl`.
 *
 * Also a plain-TCP observer client that joins channels and records what it receives.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { accessSync, chmodSync, constants, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { delimiter, join } from 'node:path';
import { removeDir, tempDir } from './temp-dir.js';

function isExecutable(p: string): boolean {
  if (!p) return false;
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** ngircd lives in /usr/sbin, which is not on every user's PATH. */
function findExecutable(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/local/sbin', '/sbin', '/usr/bin'];
  return dirs
    .filter(Boolean)
    .map((dir) => join(dir, name))
    .find(isExecutable);
}

/** `HOOKGATE_NGIRCD=/path/to/ngircd` picks the binary (an empty value or a missing file counts as not installed). */
export const NGIRCD =
  process.env.HOOKGATE_NGIRCD !== undefined
    ? isExecutable(process.env.HOOKGATE_NGIRCD)
      ? process.env.HOOKGATE_NGIRCD
      : undefined
    : findExecutable('ngircd');
export const OPENSSL = findExecutable('openssl');

/**
 * Why the IRC tests must be skipped, or undefined when ngircd is available. With HOOKGATE_REQUIRE_SERVICES=1 a missing
 * ngircd is an error instead, so CI cannot pass by skipping.
 */
export function ngircdSkipReason(): string | undefined {
  if (NGIRCD) return undefined;
  const missing = 'ngircd is not installed (apt-get install -y ngircd)';
  if (process.env.HOOKGATE_REQUIRE_SERVICES === '1')
    throw new Error(`HOOKGATE_REQUIRE_SERVICES=1 but ${missing}: the IRC tests cannot run`);
  return `${missing}; skipping the tests against a real IRC server`;
}

export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

export interface NgircdOptions {
  /** Also listen with TLS (self-signed certificate) on `tlsPort`. Needs openssl. */
  tls?: boolean;
  /** Server password (PASS). */
  password?: string;
  /** Predefined channels: name → modes (e.g. `{ '#keyed': '+k sekrit' }`). */
  channels?: Record<string, string>;
}

export interface NgircdServer {
  host: string;
  port: number;
  tlsPort: number | undefined;
  dir: string;
  /** Stop the server (SIGTERM, then SIGKILL); `start()` brings it back on the same ports. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** stop() and remove the temp dir. */
  dispose(): Promise<void>;
}

export async function startNgircd(options: NgircdOptions = {}): Promise<NgircdServer> {
  if (!NGIRCD) throw new Error('ngircd is not installed');
  const ngircd = NGIRCD;
  const dir = tempDir('hookgate-ngircd-');
  // Started as root, ngircd drops to "nobody" and then writes its PID file: the dir must be writable for it.
  chmodSync(dir, 0o777);
  const port = await freePort();
  let tlsPort: number | undefined;
  const lines = [
    '[Global]',
    'Name = irc.hookgate.test',
    'Info = hookgate test server',
    'AdminInfo1 = hookgate tests',
    'AdminInfo2 = localhost',
    'AdminEMail = nobody@localhost',
    'Listen = 127.0.0.1',
    `Ports = ${port}`,
    `PidFile = ${join(dir, 'ngircd.pid')}`,
    'MotdPhrase = "hookgate test server"',
    ...(options.password !== undefined ? [`Password = ${options.password}`] : []),
    '[Limits]',
    'MaxConnectionsIP = 0',
    'MaxNickLength = 30',
    'PingTimeout = 120',
    'PongTimeout = 20',
    '[Options]',
    'DNS = no',
    'Ident = no',
    'PAM = no',
  ];
  if (options.tls) {
    if (!OPENSSL) throw new Error('openssl is not installed');
    tlsPort = await freePort();
    const cert = join(dir, 'cert.pem');
    const key = join(dir, 'key.pem');
    execFileSync(
      OPENSSL,
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
      ],
      {
        stdio: 'ignore',
      },
    );
    chmodSync(key, 0o644);
    lines.push('[SSL]', `CertFile = ${cert}`, `KeyFile = ${key}`, `Ports = ${tlsPort}`);
  }
  for (const [name, modes] of Object.entries(options.channels ?? {}))
    lines.push('[Channel]', `Name = ${name}`, `Modes = ${modes}`);
  const conf = join(dir, 'ngircd.conf');
  writeFileSync(conf, `${lines.join('\n')}\n`);
  chmodSync(conf, 0o644);

  let child: ChildProcess | undefined;
  let output = '';
  const killOnExit = () => child?.kill('SIGKILL');

  async function start(): Promise<void> {
    output = '';
    const proc = spawn(ngircd, ['-n', '-f', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    process.once('exit', killOnExit);
    proc.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    proc.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    const deadline = Date.now() + 20_000;
    // Ready when every port accepts connections (TLS setup may first generate DH parameters).
    for (const p of [port, ...(tlsPort ? [tlsPort] : [])]) {
      for (;;) {
        if (proc.exitCode !== null) throw new Error(`ngircd exited (${proc.exitCode}):\n${output}`);
        if (await canConnect(p)) break;
        if (Date.now() > deadline) throw new Error(`ngircd did not open port ${p}:\n${output}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  async function stop(): Promise<void> {
    const proc = child;
    child = undefined;
    process.off('exit', killOnExit);
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 3000);
    await exited;
    clearTimeout(timer);
  }

  await start();
  return {
    host: '127.0.0.1',
    port,
    tlsPort,
    dir,
    stop,
    start,
    async dispose() {
      await stop();
      removeDir(dir);
    },
  };
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

export interface ObservedLine {
  raw: string;
  prefix: string | undefined;
  command: string;
  params: string[];
}

/**
 * A minimal IRC client with its own (deliberately independent) parser: registers, joins, answers PING, and records
 * every line it receives so tests can assert on exactly what the server relayed.
 */
export class IrcObserver {
  readonly lines: ObservedLine[] = [];
  private buffer = '';
  private waiters: Array<() => void> = [];
  private constructor(
    private readonly socket: Socket,
    readonly nick: string,
  ) {
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      this.buffer += d;
      let i: number;
      while ((i = this.buffer.indexOf('\r\n')) >= 0) {
        const raw = this.buffer.slice(0, i);
        this.buffer = this.buffer.slice(i + 2);
        const line = parse(raw);
        if (line.command === 'PING') this.send(`PONG :${line.params[0] ?? ''}`);
        this.lines.push(line);
      }
      for (const w of this.waiters.splice(0)) w();
    });
    socket.on('error', () => undefined);
  }

  static async connect(port: number, nick: string, password?: string): Promise<IrcObserver> {
    const socket = connect({ host: '127.0.0.1', port });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const o = new IrcObserver(socket, nick);
    if (password !== undefined) o.send(`PASS ${password}`);
    o.send(`NICK ${nick}`);
    o.send(`USER ${nick} 0 * :observer`);
    await o.waitFor((l) => l.command === '001');
    return o;
  }

  send(line: string): void {
    this.socket.write(`${line}\r\n`);
  }

  async join(channel: string): Promise<void> {
    this.send(`JOIN ${channel}`);
    await this.waitFor((l) => l.command === 'JOIN' && l.prefix?.split('!')[0] === this.nick && l.params[0] === channel);
  }

  /** PRIVMSGs received so far, optionally only those to `target`. */
  privmsgs(target?: string): Array<{ from: string; to: string; text: string; raw: string }> {
    return this.lines
      .filter((l) => l.command === 'PRIVMSG' && (target === undefined || l.params[0] === target))
      .map((l) => ({
        from: l.prefix?.split('!')[0] ?? '',
        to: l.params[0] ?? '',
        text: l.params[1] ?? '',
        raw: l.raw,
      }));
  }

  /** Resolves once a received line satisfies `pred` (checking lines already received first). */
  async waitFor(pred: (l: ObservedLine) => boolean, timeoutMs = 15_000): Promise<ObservedLine> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.lines.find(pred);
      if (hit) return hit;
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(
          `observer ${this.nick}: timed out; last lines:\n${this.lines
            .slice(-10)
            .map((l) => l.raw)
            .join('\n')}`,
        );
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** Waits until `n` PRIVMSGs to `target` have arrived. */
  async waitForPrivmsgs(
    target: string,
    n: number,
    timeoutMs = 20_000,
  ): Promise<Array<{ from: string; to: string; text: string; raw: string }>> {
    const deadline = Date.now() + timeoutMs;
    while (this.privmsgs(target).length < n) {
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(
          `observer ${this.nick}: expected ${n} PRIVMSGs to ${target}, got ${this.privmsgs(target).length}`,
        );
      await this.waitFor(() => this.privmsgs(target).length >= n, left).catch(() => undefined);
    }
    return this.privmsgs(target);
  }

  close(): void {
    this.socket.end('QUIT :bye\r\n');
    this.socket.destroy();
  }
}

function parse(raw: string): ObservedLine {
  let rest = raw;
  let prefix: string | undefined;
  if (rest.startsWith(':')) {
    const sp = rest.indexOf(' ');
    prefix = rest.slice(1, sp);
    rest = rest.slice(sp + 1);
  }
  const trailingAt = rest.indexOf(' :');
  const head = trailingAt >= 0 ? rest.slice(0, trailingAt) : rest;
  const parts = head.split(' ').filter(Boolean);
  if (trailingAt >= 0) parts.push(rest.slice(trailingAt + 2));
  const [command = '', ...params] = parts;
  return { raw, prefix, command: command.toUpperCase(), params };
}
