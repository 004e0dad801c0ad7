/** One IRC connection: line framing, PING/PONG, ISUPPORT, listeners; and the flood gate that paces what we send. */
import type { Socket } from 'node:net';
import { setTimeout as sleepFor } from 'node:timers/promises';
import { errorCode } from '../../http-util.js';
import { logSafe } from '../../text-safe.js';
import { assertOneLine, IrcError, type IrcMessage, nickOf, parseIrcLine } from './protocol.js';

// ---------------------------------------------------------------------------------------------------------------
// Flood control

/** A token bucket: `burst` lines at once, then one more every `intervalMs`. */
export class FloodGate {
  private tokens: number;
  private last = Date.now();
  constructor(
    private readonly burst: number,
    private readonly intervalMs: number,
  ) {
    this.tokens = burst;
  }

  async take(signal?: AbortSignal): Promise<void> {
    if (this.intervalMs <= 0) return;
    for (;;) {
      const now = Date.now();
      this.tokens = Math.min(this.burst, this.tokens + (now - this.last) / this.intervalMs);
      this.last = now;
      if (this.tokens >= 1) {
        this.tokens -= 1;
        return;
      }
      await sleep(Math.ceil((1 - this.tokens) * this.intervalMs), signal);
    }
  }
}

export async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  try {
    await sleepFor(ms, undefined, signal ? { signal } : undefined);
  } catch {
    throw new IrcError(true, 'delivery aborted');
  }
}

// ---------------------------------------------------------------------------------------------------------------
// One connection

type Listener = (m: IrcMessage) => void;

/** The most a server may send without a line break before we give up on it (protects memory). */
const MAX_PENDING_BYTES = 64 * 1024;

export class IrcConnection {
  nick: string;
  /** Channel prefixes (ISUPPORT CHANTYPES). */
  chantypes = '#&';
  private casemapping = 'rfc1459';
  /** Channels we are in, case-folded. */
  readonly joined = new Set<string>();
  closed = false;
  lastReceivedAt = Date.now();
  readonly flood: FloodGate;
  private closeReason = 'the server closed the connection';
  private pending: Buffer = Buffer.alloc(0);
  private readonly listeners = new Set<Listener>();
  private readonly closeListeners = new Set<(reason: string) => void>();
  private keepalive: NodeJS.Timeout | undefined;

  constructor(
    private readonly socket: Socket,
    nick: string,
    flood: FloodGate,
  ) {
    this.nick = nick;
    this.flood = flood;
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (err) => {
      this.closeReason = `connection error (${codeOf(err)})`;
    });
    socket.on('close', () => this.handleClose());
  }

  write(line: string): void {
    assertOneLine(line);
    if (!this.closed) this.socket.write(`${line}\r\n`);
  }

  /** Subscribes to every parsed line; returns the unsubscribe function. */
  on(fn: Listener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  onClose(fn: (reason: string) => void): void {
    if (this.closed) fn(this.closeReason);
    else this.closeListeners.add(fn);
  }

  /** Case-folds a nick or channel name the way the server compares them (ISUPPORT CASEMAPPING). */
  fold(s: string): string {
    const lower = s.toLowerCase();
    if (this.casemapping === 'ascii') return lower;
    const folded = lower.replace(/\[/g, '{').replace(/\]/g, '}').replace(/\\/g, '|');
    return this.casemapping === 'strict-rfc1459' ? folded : folded.replace(/~/g, '^');
  }

  /** Closes at once: the connection counts as gone now, not when the socket's close event comes round. */
  destroy(reason: string): void {
    if (this.closed) return;
    this.closeReason = reason;
    this.socket.destroy();
    this.handleClose();
  }

  /** QUIT politely; the server answers ERROR and closes. Bounded, so a stuck server cannot hold up shutdown. */
  async quit(message: string): Promise<void> {
    if (this.closed) return;
    this.closeReason = 'closed by hookgate';
    const closed = new Promise<void>((resolve) => this.onClose(() => resolve()));
    this.write(`QUIT :${message}`);
    this.socket.end();
    const timer = setTimeout(() => this.socket.destroy(), 2000);
    await closed;
    clearTimeout(timer);
  }

  /** Probes the server when it has been silent for `idleMs`, and drops the connection if it stays silent. */
  startKeepalive(idleMs: number, deadMs: number): void {
    let probed = false;
    this.keepalive = setInterval(
      () => {
        const silent = Date.now() - this.lastReceivedAt;
        if (silent > idleMs + deadMs) this.destroy('the server stopped answering');
        else if (silent > idleMs && !probed) {
          probed = true;
          this.write(`PING :keepalive-${Date.now()}`);
        } else if (silent <= idleMs) probed = false;
      },
      Math.max(50, Math.min(idleMs, deadMs) / 2),
    );
    this.keepalive.unref();
  }

  /**
   * Resolves with the first non-undefined result of `pick` over incoming lines. `pick` may throw an IrcError to
   * fail the wait. Fails retryably when the connection closes, after `timeoutMs`, or when `signal` aborts.
   */
  waitFor<T>(
    pick: (m: IrcMessage) => T | undefined,
    timeoutMs: number,
    what: string,
    signal?: AbortSignal,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const done = (fn: () => void) => {
        off();
        this.closeListeners.delete(onClose);
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        fn();
      };
      const off = this.on((m) => {
        try {
          const r = pick(m);
          if (r !== undefined) done(() => resolve(r));
        } catch (err) {
          done(() => reject(err));
        }
      });
      const onClose = (reason: string) => done(() => reject(new IrcError(true, `${what}: ${reason}`)));
      const onAbort = () => done(() => reject(new IrcError(true, `${what}: aborted`)));
      const timer = setTimeout(
        () => done(() => reject(new IrcError(true, `${what}: no answer within ${timeoutMs} ms`))),
        timeoutMs,
      );
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      if (this.closed) return onClose(this.closeReason);
      this.closeListeners.add(onClose);
    });
  }

  private onData(chunk: Buffer): void {
    this.lastReceivedAt = Date.now();
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    let nl: number;
    while ((nl = this.pending.indexOf(0x0a)) >= 0) {
      const raw = this.pending.subarray(0, nl).toString('utf8').replace(/\r$/, '');
      this.pending = this.pending.subarray(nl + 1);
      const m = parseIrcLine(raw);
      if (m) this.dispatch(m);
      if (this.closed) return;
    }
    if (this.pending.length > MAX_PENDING_BYTES) this.destroy('the server sent an over-long line');
  }

  private dispatch(m: IrcMessage): void {
    // Book-keeping first, so that listeners see the state the line produced.
    const me = (prefix: string | undefined) => {
      const n = nickOf(prefix);
      return n !== undefined && this.fold(n) === this.fold(this.nick);
    };
    switch (m.command) {
      case 'PING':
        this.write(`PONG :${m.params[0] ?? ''}`);
        break;
      case '005':
        for (const token of m.params.slice(1, -1)) {
          const [key, value] = token.split('=', 2);
          if (key === 'CHANTYPES' && value) this.chantypes = value;
          if (key === 'CASEMAPPING' && value) this.casemapping = value.toLowerCase();
        }
        break;
      case 'NICK':
        if (me(m.prefix) && m.params[0]) this.nick = m.params[0];
        break;
      case 'JOIN':
        if (me(m.prefix) && m.params[0]) this.joined.add(this.fold(m.params[0]));
        break;
      case 'PART':
        if (me(m.prefix) && m.params[0]) this.joined.delete(this.fold(m.params[0]));
        break;
      case 'KICK':
        if (m.params[0] && m.params[1] && this.fold(m.params[1]) === this.fold(this.nick))
          this.joined.delete(this.fold(m.params[0]));
        break;
      case 'ERROR':
        this.closeReason = `the server closed the connection: ${logSafe(m.params.at(-1) ?? '', SERVER_TEXT_MAX)}`;
        break;
    }
    for (const fn of [...this.listeners]) fn(m);
  }

  private handleClose(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.keepalive) clearInterval(this.keepalive);
    for (const fn of [...this.closeListeners]) fn(this.closeReason);
    this.closeListeners.clear();
    this.listeners.clear();
  }
}

/** Longest server-provided text (an ERROR line's reason) quoted in our errors. */
export const SERVER_TEXT_MAX = 160;

/** A socket error's code (ECONNREFUSED, ERR_TLS_...) for messages: never its message. */
export function codeOf(err: unknown): string {
  return errorCode(err) ?? 'unknown error';
}
