/**
 * Watch renewal (docs/gmail.md): `users.watch` (the topic, the configured labels) at start and every
 * `hooks.gmail.renewEveryHours` (a watch lapses after 7 days); the expiry is stored (`gmail status` shows it). The
 * schedule is read from the store (`watchRenewedAt`), so a restart, or another node on the same database, does not
 * renew again before it is due; a lease `gmail-watch:<account>` keeps two nodes from renewing at once. A failure is
 * recorded (`lastError`) and tried again after a backoff. `startGmail` starts it with the fetcher.
 */
import { gmailTopicName } from '../config/checks/gmail.js';
import { errorMessage, logSafe } from '../text-safe.js';
import { type GmailDeps, GmailFetcher, GoogleClients } from './fetcher.js';

const RETRY_MIN_MS = 30_000;
const RETRY_MAX_MS = 60 * 60_000;
/** The schedule is looked at at least this often (a config reload changing renewEveryHours takes effect by then). */
const TICK_MAX_MS = 10 * 60_000;
/** A watch renewed this recently counts as "at start" too (several nodes starting together renew once). */
const START_GRACE_MS = 60_000;
/** How long a stop waits for a fetch or renewal in flight. */
const STOP_GRACE_MS = 2_000;

export class GmailWatch {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private failures = 0;
  private started = false;
  private running: Promise<void> | undefined;

  constructor(
    private readonly deps: Pick<GmailDeps, 'store' | 'logger' | 'owner' | 'ctx'>,
    private readonly clients: GoogleClients,
  ) {}

  start(): void {
    this.tick();
  }

  stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    return this.running ?? Promise.resolve();
  }

  private tick(): void {
    if (this.stopped) return;
    this.running = this.check()
      .then((next) => this.schedule(next))
      .finally(() => (this.running = undefined));
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    if (this.stopped) return;
    this.timer = setTimeout(() => this.tick(), Math.max(50, ms));
    this.timer.unref();
  }

  /** Renew when due; returns the wait until the next look. */
  private async check(): Promise<number> {
    const gmail = this.deps.ctx().config.hooks.gmail;
    const account = gmail.account;
    const everyMs = gmail.renewEveryHours * 3_600_000;
    if (!account) return TICK_MAX_MS;
    const topic = gmailTopicName(gmail);
    const api = this.clients.for(gmail);
    if (!topic || !api) return TICK_MAX_MS;
    const { store, owner, logger } = this.deps;
    try {
      const status = await store.readGmailStatus(account);
      const last = status?.watchRenewedAt ?? null;
      const now = Date.now();
      const due =
        last === null || (this.started ? now >= last + everyMs : now >= last + Math.min(everyMs, START_GRACE_MS));
      this.started = true;
      if (!due) return Math.min(TICK_MAX_MS, last! + everyMs - now);
      const lease = `gmail-watch:${account}`;
      if (!(await store.leaseHeartbeat(lease, owner, now, 60_000))) return Math.min(TICK_MAX_MS, everyMs);
      try {
        const w = await api.watch(topic, gmail.labels);
        const expiration = Number(w.expiration);
        await store.recordGmailWatch({ account, expiration, historyId: String(w.historyId), now: Date.now() });
        logger.info({ account, expiration: new Date(expiration).toISOString() }, 'gmail watch renewed');
      } finally {
        await store.releaseHeartbeat(lease, owner).catch(() => {});
      }
      this.failures = 0;
      return Math.min(TICK_MAX_MS, everyMs);
    } catch (err) {
      this.failures++;
      const wait = Math.min(RETRY_MAX_MS, everyMs, RETRY_MIN_MS * 2 ** (this.failures - 1));
      const message = logSafe(errorMessage(err), 300);
      logger.warn({ account, retryInMs: wait, err: message }, 'gmail watch renewal failed');
      await store.recordGmailError(account, message, Date.now()).catch(() => {});
      return wait;
    }
  }
}

export interface GmailService {
  /** The ingress committed a push: fetch now. */
  notify(account: string): void;
  stop(): Promise<void>;
}

/** The fetcher and the watch renewal over one store; both idle while `hooks.gmail.account` is unset. */
export function startGmail(deps: Omit<GmailDeps, 'retry'>): GmailService {
  const clients = new GoogleClients(deps.fetchFn);
  const fetcher = new GmailFetcher(deps, clients);
  const watch = new GmailWatch(deps, clients);
  watch.start();
  fetcher.notify(); // pushes accepted before a crash or a stop are fetched now
  return {
    notify: () => fetcher.notify(),
    // A fetch in flight gets a moment to commit; one still waiting on Google is left (its pushes stay pending).
    stop: async () => {
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, STOP_GRACE_MS)));
      await Promise.race([Promise.all([fetcher.stop(), watch.stop()]), grace]);
      clearTimeout(timer);
    },
  };
}
