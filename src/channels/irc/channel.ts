/** The IRC channel: one kept-open connection, reconnect with backoff, joins, paced PRIVMSGs confirmed by a PING. */
import { randomBytes } from 'node:crypto';
import { type CheckResult, checkFail, checkOk } from '../../check.js';
import type { Channel, ChannelContext, OutboundMessage, SendResult } from '../types.js';
import { codeOf, FloodGate, IrcConnection, sleep } from './connection.js';
import {
  type IrcConfig,
  IrcError,
  type IrcMessage,
  isErrorNumeric,
  nickOf,
  numericError,
  privmsgTextBudget,
  splitIrcText,
  checkIrcRecipient,
  TARGET_RESERVE,
} from './protocol.js';
import { dial, register } from './register.js';

// ---------------------------------------------------------------------------------------------------------------
// The channel

export interface IrcChannelOptions {
  /** First reconnect delay after a drop or failure; doubles per failure (default 1 s). */
  reconnectBaseMs?: number;
  /** Reconnect delay cap (default 60 s). */
  reconnectMaxMs?: number;
  /** Silence after which the server is probed with a PING (default 120 s); no answer within `timeoutMs` drops it. */
  keepaliveIdleMs?: number;
}

/** The IRC channel; `close()` sends QUIT and stops reconnecting. */
export interface IrcChannel extends Channel {
  close(): Promise<void>;
  check(signal: AbortSignal): Promise<CheckResult>;
  /** Whether a registered connection is open now (for health reporting and tests). */
  readonly connected: boolean;
}

export function createIrcChannel(config: IrcConfig, ctx: ChannelContext, options: IrcChannelOptions = {}): IrcChannel {
  return new IrcClient(config, ctx, options);
}

class IrcClient implements IrcChannel {
  readonly id = 'irc';
  /**
   * In characters, for the outbox's split: a chunk this long of single-byte text fits one PRIVMSG line to a target
   * of up to 50 characters, whatever alternative nick we end up with. Multi-byte text is split further by bytes.
   */
  readonly maxTextLength: number;
  private readonly user: string;
  private conn: IrcConnection | undefined;
  private connecting: Promise<IrcConnection> | undefined;
  /** No connection attempt before this time (backoff). */
  private retryAt = 0;
  private failures = 0;
  /** The last attempt failed in a way retrying cannot fix: repeated to sends until the backoff has passed. */
  private lastFatal: IrcError | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  /** Set by the first delivery: from then on a dropped connection is re-established in the background. */
  private wanted = false;
  private closedFlag = false;
  private readonly lifetime = new AbortController();
  /** Deliveries run one at a time, so an error numeric can be attributed to the delivery that caused it. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly cfg: IrcConfig,
    private readonly ctx: ChannelContext,
    private readonly options: IrcChannelOptions,
  ) {
    this.user = cfg.username ?? cfg.nick;
    // The longest alternative nick is the nick plus two characters, or nine (the shortened ones with digits).
    const longestNick = 'x'.repeat(Math.max(cfg.nick.length + 2, 9));
    this.maxTextLength = Math.max(1, privmsgTextBudget(longestNick, this.user, 'x'.repeat(TARGET_RESERVE)));
  }

  checkRecipient(to: string): string | undefined {
    return checkIrcRecipient(to);
  }

  get connected(): boolean {
    return this.conn !== undefined && !this.conn.closed;
  }

  send(message: OutboundMessage, signal?: AbortSignal): Promise<SendResult> {
    const run = this.queue.then(() => this.deliver(message, signal));
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** `hookgate doctor`: connect (TLS if configured), register with the configured nick and credentials, QUIT. */
  async check(signal: AbortSignal): Promise<CheckResult> {
    const where = `${this.cfg.host}:${this.cfg.port}${this.cfg.tls ? ' (TLS)' : ''}`;
    let conn: IrcConnection | undefined;
    try {
      conn = new IrcConnection(
        await dial(this.cfg, this.cfg.timeoutMs, signal),
        this.cfg.nick,
        new FloodGate(this.cfg.floodBurst, 0),
      );
      await register(conn, this.cfg, this.cfg.timeoutMs, signal);
      const nick = conn.nick;
      await conn.quit('hookgate doctor');
      return checkOk(`registered on ${where} as ${nick}`);
    } catch (err) {
      conn?.destroy('check failed');
      const message = err instanceof IrcError ? err.message : `IRC connection failed (${codeOf(err)})`;
      return checkFail(`${where}: ${message}`, 'check host, port, tls, and password / saslPassword');
    }
  }

  async close(): Promise<void> {
    if (this.closedFlag) return;
    this.closedFlag = true;
    this.lifetime.abort();
    clearTimeout(this.reconnectTimer);
    await this.connecting?.catch(() => undefined);
    const conn = this.conn;
    this.conn = undefined;
    if (conn) await conn.quit('hookgate shutting down');
  }

  private async deliver(message: OutboundMessage, signal?: AbortSignal): Promise<SendResult> {
    try {
      const target = message.to;
      const expected = checkIrcRecipient(target);
      if (expected !== undefined) throw new IrcError(false, `invalid IRC recipient: \`to\` must be ${expected}`);
      if (signal?.aborted) throw new IrcError(true, 'delivery aborted');
      this.wanted = true;
      const conn = await this.acquire(signal);
      if (conn.chantypes.includes(target[0] ?? '') && !conn.joined.has(conn.fold(target)))
        await this.join(conn, target, signal);
      const lines = splitIrcText(message.text, privmsgTextBudget(conn.nick, this.user, target));
      if (lines.length === 0) return { ok: true };
      await this.sendLines(conn, target, lines, signal);
      return { ok: true };
    } catch (err) {
      if (err instanceof IrcError) {
        return {
          ok: false,
          retryable: err.retryable,
          error: err.message,
          ...(err.retryAfterMs !== undefined ? { retryAfterMs: err.retryAfterMs } : {}),
        };
      }
      this.ctx.logger.error(
        { channel: 'irc', err: codeOf(err), deliveryId: message.deliveryId, runId: message.runId },
        'irc delivery failed unexpectedly',
      );
      return { ok: false, retryable: true, error: 'IRC delivery failed unexpectedly' };
    }
  }

  /** PRIVMSG each line (flood-controlled), then PING and wait for the PONG: see "What delivered means" above. */
  private async sendLines(conn: IrcConnection, target: string, lines: string[], signal?: AbortSignal): Promise<void> {
    const errors: IrcMessage[] = [];
    const off = conn.on((m) => {
      if (isErrorNumeric(m)) errors.push(m);
    });
    try {
      for (let i = 0; i < lines.length; i++) {
        await conn.flood.take(signal);
        if (conn.closed) throw new IrcError(true, `the IRC connection dropped after ${i} of ${lines.length} lines`);
        conn.write(`PRIVMSG ${target} :${lines[i]}`);
      }
      const token = `hookgate-${randomBytes(6).toString('hex')}`;
      conn.write(`PING :${token}`);
      try {
        await conn.waitFor(
          (m) => (m.command === 'PONG' && m.params.at(-1) === token ? true : undefined),
          this.cfg.timeoutMs,
          'waiting for the IRC server to confirm the message (some lines may have been delivered)',
          signal,
        );
      } catch (err) {
        // A server that does not answer a PING is stuck: start over on a fresh connection.
        if (!signal?.aborted) conn.destroy('the server did not answer a PING');
        throw err;
      }
    } finally {
      off();
    }
    const first = errors[0];
    if (first) throw numericError(first, target);
  }

  private async join(conn: IrcConnection, channel: string, signal?: AbortSignal): Promise<void> {
    const folded = conn.fold(channel);
    const key = Object.entries(this.cfg.channelKeys ?? {}).find(([name]) => conn.fold(name) === folded)?.[1];
    await conn.flood.take(signal);
    conn.write(key === undefined ? `JOIN ${channel}` : `JOIN ${channel} ${key}`);
    await conn.waitFor(
      (m) => {
        if (
          m.command === 'JOIN' &&
          conn.fold(nickOf(m.prefix) ?? '') === conn.fold(conn.nick) &&
          conn.fold(m.params[0] ?? '') === folded
        )
          return true;
        if (isErrorNumeric(m) && conn.fold(m.params[1] ?? '') === folded) throw numericError(m, channel);
        return undefined;
      },
      this.cfg.timeoutMs,
      `joining ${channel}`,
      signal,
    );
  }

  /** A registered connection: the open one, the attempt in progress, or a new attempt once the backoff allows. */
  private async acquire(signal?: AbortSignal): Promise<IrcConnection> {
    for (;;) {
      if (this.closedFlag) throw new IrcError(true, 'the IRC channel is closed');
      if (this.conn && !this.conn.closed) return this.conn;
      if (!this.connecting) {
        const wait = this.retryAt - Date.now();
        if (wait > 0) {
          if (this.lastFatal) throw this.lastFatal;
          if (wait > this.cfg.timeoutMs) {
            throw new IrcError(
              true,
              `not connected to the IRC server; next attempt in ${Math.ceil(wait / 1000)} s`,
              wait,
            );
          }
          await sleep(wait, signal);
          continue;
        }
        void this.startConnect();
      }
      const attempt = this.connecting;
      if (attempt) await raceAbort(attempt, signal);
    }
  }

  private startConnect(): Promise<IrcConnection> {
    if (this.connecting) return this.connecting;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    const attempt = this.openConnection().then(
      (conn) => {
        if (this.closedFlag) {
          void conn.quit('hookgate shutting down');
          throw new IrcError(true, 'the IRC channel is closed');
        }
        this.conn = conn;
        this.failures = 0;
        this.retryAt = 0;
        this.lastFatal = undefined;
        conn.onClose((reason) => this.onDrop(conn, reason));
        return conn;
      },
      (err: unknown) => {
        const e = err instanceof IrcError ? err : new IrcError(true, `IRC connection failed (${codeOf(err)})`);
        this.failures++;
        const delay = this.backoff(this.failures);
        this.lastFatal = e.retryable ? undefined : e;
        if (!this.closedFlag) {
          this.ctx.logger.warn({ channel: 'irc', error: e.message, retryInMs: delay }, 'irc connection failed');
          // Fatal failures (bad password, rejected certificate) are not retried in the background: only a new
          // delivery, after the backoff, tries again.
          if (e.retryable && this.wanted) this.scheduleReconnect(delay);
          else this.retryAt = Date.now() + delay;
        }
        throw e;
      },
    );
    const tracked = attempt.finally(() => {
      this.connecting = undefined;
    });
    tracked.catch(() => undefined);
    this.connecting = tracked;
    return tracked;
  }

  private async openConnection(): Promise<IrcConnection> {
    const signal = this.lifetime.signal;
    const socket = await dial(this.cfg, this.cfg.timeoutMs, signal);
    const conn = new IrcConnection(socket, this.cfg.nick, new FloodGate(this.cfg.floodBurst, this.cfg.floodIntervalMs));
    try {
      await register(conn, this.cfg, this.cfg.timeoutMs, signal);
    } catch (err) {
      conn.destroy('registration failed');
      throw err;
    }
    conn.startKeepalive(this.options.keepaliveIdleMs ?? 120_000, this.cfg.timeoutMs);
    this.ctx.logger.info(
      { channel: 'irc', host: this.cfg.host, port: this.cfg.port, tls: this.cfg.tls, nick: conn.nick },
      'irc connected',
    );
    return conn;
  }

  private onDrop(conn: IrcConnection, reason: string): void {
    if (this.conn !== conn) return;
    this.conn = undefined;
    if (this.closedFlag) return;
    this.ctx.logger.warn({ channel: 'irc', reason }, 'irc connection lost; reconnecting');
    this.scheduleReconnect(this.backoff(0));
  }

  private scheduleReconnect(delayMs: number): void {
    clearTimeout(this.reconnectTimer);
    this.retryAt = Date.now() + delayMs;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.startConnect().catch(() => undefined);
    }, delayMs);
    // A pending reconnect alone does not keep the process alive.
    this.reconnectTimer.unref();
  }

  /** Exponential backoff with ±20 % jitter, so several hookgate nodes do not reconnect in lockstep. */
  private backoff(failures: number): number {
    const base = this.options.reconnectBaseMs ?? 1000;
    const max = this.options.reconnectMaxMs ?? 60_000;
    const raw = Math.min(max, base * 2 ** Math.max(0, failures - 1));
    return Math.round(raw * (0.8 + Math.random() * 0.4));
  }
}

function raceAbort<T>(promise: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(new IrcError(true, 'delivery aborted'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new IrcError(true, 'delivery aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
