/**
 * The SQLite store's files, watched from the outside: that they can be written at all (checked before opening),
 * that the open database is still the file at its path (checked after every commit), and the WAL's size (kept
 * bounded with the checkpoint thread's help).
 */
import {
  accessSync,
  closeSync,
  constants,
  fstatSync,
  openSync,
  statfsSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Worker } from 'node:worker_threads';
import { StoreError } from '../errors.js';
import { exposedPaths } from '../private-files.js';
import { logPath } from '../text-safe.js';
import type { CheckpointReply } from './sqlite-checkpoint-worker.js';

/** A store file (or its directory) that cannot be written: what to look at. */
function unwritable(what: string, file: string, err: unknown): StoreError {
  const code = (err as NodeJS.ErrnoException).code ?? 'error';
  return new StoreError(
    `the store ${what} ${logPath(file, 300)} cannot be written (${code}); hookgate needs to write the database, ` +
      'its -wal and -shm files and their directory: is one immutable or append-only (lsattr; chattr -i -a), or the filesystem read-only?',
    { cause: err },
  );
}

/**
 * Refuse a store hookgate cannot write: each existing file (database, -wal, -shm) is opened read-write and the
 * directory gets a probe file. An immutable (`chattr +i`) or read-only store would otherwise open, and the first
 * write to the memory-mapped -shm kills the process with SIGBUS, which no handler can catch or log. Open(2) itself
 * is the probe: as root, mode bits say nothing about attributes and access(2) misses append-only (`chattr +a`). A
 * full disk is not refused here. Only before this process opens the store: a close drops SQLite's locks (ShmGuard).
 */
export function assertWritableStore(path: string): void {
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    let fd: number;
    try {
      fd = openSync(file, 'r+');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw unwritable('file', file, err);
    }
    closeSync(fd);
  }
  const probe = join(dirname(path), `.hookgate-write-probe-${process.pid}`);
  try {
    writeFileSync(probe, '');
    unlinkSync(probe);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // ENOENT: a new store, its directory is created when it opens; a full disk is answered 503, not refused here.
    if (code !== 'ENOENT' && code !== 'ENOSPC' && code !== 'EDQUOT') throw unwritable('directory', dirname(path), err);
  }
}

/**
 * How long a check of the store's files stands (ShmGuard, StoreFileIdentity): each asks the kernel at most once per
 * millisecond. Below saturation a batch commits every 0.1–0.2 ms, and a check per batch was a visible share of a
 * request's cost there (docs/performance.md); the window it leaves stays far shorter than any operator's command.
 */
const ASK_EVERY_MS = 1;

/** Whether a check may ask the kernel now: at most once per `ASK_EVERY_MS`, else its last answer stands. */
class AskWindow {
  private askedAt = -Infinity;

  due(): boolean {
    const t = performance.now();
    if (t - this.askedAt < ASK_EVERY_MS) return false;
    this.askedAt = t;
    return true;
  }
}

/** What access(2) says of a file that must not be written through a map: immutable or append-only, a read-only mount. */
const UNWRITABLE_CODES = new Set(['EPERM', 'EACCES', 'EROFS']);

/**
 * The same question as `assertWritableStore`, on the -shm, while the store is open. SQLite writes its WAL index through
 * a shared memory map of the -shm, on every commit, checkpoint and even read (its read mark); made immutable while
 * open (`chattr +i`), the file's pages are write-protected and the next such write is a SIGBUS that kills the
 * process with no log line. The store asks before each write batch, read and checkpoint and refuses with this error
 * (503) while it lasts; a window of at most a millisecond between the question and SQLite's write remains. A missing -shm
 * (deleted while mapped) says nothing: not refused.
 *
 * access(2) (it reports immutable files and read-only mounts, not append-only), never open(2) and close(2): closing
 * any descriptor of the -shm drops every POSIX lock this process holds on it, SQLite's included, and another process
 * opening the store (the CLI, a reader) then takes itself for the first, truncates the -shm and rebuilds it under
 * our map: the SIGBUS this guard exists to prevent.
 */
export class ShmGuard {
  private refusal: StoreError | undefined;
  private readonly asks = new AskWindow();

  constructor(
    private readonly path: string,
    /** Told when the -shm stops (an error) or starts again (undefined) being writable. */
    private readonly onChange: (refused: StoreError | undefined) => void = () => {},
  ) {}

  /** The error to refuse with while the -shm cannot be written, else undefined. Asked at most once per `ASK_EVERY_MS`. */
  refused(): StoreError | undefined {
    if (!this.asks.due()) return this.refusal;
    let err: unknown;
    try {
      accessSync(this.path, constants.W_OK);
    } catch (e) {
      err = e;
    }
    const now =
      err !== undefined && UNWRITABLE_CODES.has((err as NodeJS.ErrnoException).code ?? '')
        ? unwritable('file', this.path, err)
        : undefined;
    const changed = Boolean(now) !== Boolean(this.refusal);
    this.refusal = now;
    if (changed) this.onChange(now);
    return now;
  }
}

/** Errors that say "no space" themselves: SQLite's SQLITE_FULL (a write got ENOSPC), and the OS's (a quota too). */
const NO_SPACE_CODES = new Set(['SQLITE_FULL', 'ENOSPC', 'EDQUOT']);
/**
 * Below this much free space an I/O error at open is taken for a full disk: SQLite reports a -shm it cannot size
 * (tmpfs, ENOSPC) as SQLITE_IOERR_SHMSIZE and a -wal it cannot create (no inode left) as SQLITE_CANTOPEN, never
 * with the errno; the -shm alone needs 32 KiB.
 */
const NEARLY_FULL_BYTES = 1024 * 1024;

/**
 * Whether opening the store at `path` failed because its filesystem is full, which passes once space is freed (the
 * service then starts and retries: see deferred.ts): a description for the log, or undefined for every other
 * failure (a corrupt file, one refused by `assertWritableStore`, permissions, a lock held past the busy timeout),
 * which stays fatal.
 */
export function diskFullAtOpen(err: unknown, path: string): string | undefined {
  const codes: string[] = [];
  for (let e = err as { code?: unknown; cause?: unknown } | undefined; e && codes.length < 8; e = e.cause as typeof e) {
    if (typeof e.code === 'string') codes.push(e.code);
  }
  const direct = codes.find((c) => NO_SPACE_CODES.has(c));
  const io = codes.find((c) => c.startsWith('SQLITE_IOERR') || c === 'SQLITE_CANTOPEN');
  if (!direct && !io) return undefined;
  let free: { bytes: number; inodes: number } | undefined;
  try {
    const s = statfsSync(dirname(path));
    // As root the blocks reserved for root are usable too.
    free = { bytes: (process.getuid?.() === 0 ? s.bfree : s.bavail) * s.bsize, inodes: s.ffree };
  } catch {
    free = undefined;
  }
  const room = free ? `; ${free.bytes} bytes and ${free.inodes} inodes free on ${logPath(dirname(path), 300)}` : '';
  if (direct) return `the disk is full (${direct}${room})`;
  if (free && (free.bytes < NEARLY_FULL_BYTES || free.inodes === 0)) return `the disk is full (${io}${room})`;
  return undefined;
}

/**
 * The identity of the open database file, compared with the file at its path: unlinked (nlink 0), moved away, or
 * replaced (another dev/inode). SQLite keeps writing to an unlinked file, so without this check the service would
 * answer 200 for writes that vanish at the next start. Costs one stat per commit, at most one per `ASK_EVERY_MS`
 * (and an fstat once it fails).
 */
export class StoreFileIdentity {
  private readonly fd: number;
  private readonly dev: number;
  private readonly ino: number;
  private readonly asks = new AskWindow();

  constructor(private readonly path: string) {
    this.fd = openSync(path, 'r');
    const s = fstatSync(this.fd);
    this.dev = s.dev;
    this.ino = s.ino;
  }

  /**
   * Why the open database is no longer the store at its path, or undefined while it is (or was, less than
   * `ASK_EVERY_MS` ago: once it is lost the store fails for good, so only "still there" is ever reused).
   */
  lost(): string | undefined {
    if (!this.asks.due()) return undefined;
    const now = statSync(this.path, { throwIfNoEntry: false });
    // The path still names our inode (which the open descriptor keeps from being reused), so it has a link: the
    // usual case needs no fstat. Otherwise the fstat tells a deletion from a move or a replacement.
    if (now && now.dev === this.dev && now.ino === this.ino) return undefined;
    if (fstatSync(this.fd).nlink === 0) return 'was deleted';
    return now ? 'was replaced by another file' : 'was moved away';
  }

  close(): void {
    closeSync(this.fd);
  }
}

/**
 * When the WAL file passes `WAL_CHECKPOINT_BYTES`, the writer asks the checkpoint thread for a checkpoint and holds
 * its next batch (requests queue, the event loop stays free) until the thread answers; with nothing appended
 * meanwhile the checkpoint copies every frame back, the next commit starts the WAL over, and `journal_size_limit`
 * (`WAL_KEEP_BYTES`) truncates the file. Measured in docs/operations.md ("Storage: the WAL's bound").
 */
export const WAL_CHECKPOINT_BYTES = 8 * 1024 * 1024;
export const WAL_KEEP_BYTES = 2 * 1024 * 1024;
/** A checkpoint that does not answer within this (a stalled disk) lets the writes go on; the next batch asks again. */
const HOLD_MAX_MS = 1000;
/** After a checkpoint that could not copy everything (a reader's snapshot, a full disk), wait before holding again. */
const RETRY_AFTER_MS = 100;

export class WalBound {
  private seq = 0;
  private waiting: { seq: number; resolve: () => void } | undefined;
  private notBefore = 0;
  /** Resolves when the requested checkpoint answered; the writer awaits it before its next batch. */
  hold: Promise<void> | undefined;

  constructor(
    private readonly walPath: string,
    private readonly worker: Worker,
  ) {}

  /** After a commit: ask for a checkpoint if the WAL passed its size (one stat). */
  afterCommit(): void {
    if (this.hold || Date.now() < this.notBefore) return;
    const size = statSync(this.walPath, { throwIfNoEntry: false })?.size ?? 0;
    if (size < WAL_CHECKPOINT_BYTES) return;
    const seq = ++this.seq;
    this.hold = new Promise<void>((resolve) => {
      const timer = setTimeout(() => this.answered({ seq, done: false }), HOLD_MAX_MS);
      this.waiting = { seq, resolve: () => (clearTimeout(timer), resolve()) };
    });
    this.worker.postMessage({ checkpoint: seq });
  }

  /** The checkpoint thread's answer (or the timeout's): release the held writes. */
  answered(reply: Extract<CheckpointReply, { seq: number }>): void {
    const w = this.waiting;
    if (!w || w.seq !== reply.seq) return;
    this.waiting = undefined;
    this.hold = undefined;
    if (!reply.done) this.notBefore = Date.now() + RETRY_AFTER_MS;
    w.resolve();
  }

  /** The thread is gone: never hold again. */
  release(): void {
    const w = this.waiting;
    if (w) this.answered({ seq: w.seq, done: false });
    this.notBefore = Number.POSITIVE_INFINITY;
  }
}

/**
 * The warning for a store whose directory or files are readable by group or others (it holds transcripts and
 * replies), or undefined. Called before opening creates anything: only what a user (or an older version) left open.
 */
export function exposedStoreWarning(path: string): string | undefined {
  if (path === ':memory:') return undefined;
  const exposed = exposedPaths([dirname(path), path, `${path}-wal`, `${path}-shm`]);
  if (!exposed.length) return undefined;
  return `the store is readable by group or others: ${exposed.map((e) => `${logPath(e.path, 300)} (mode ${e.mode})`).join(', ')}; it holds transcripts and replies: chmod 700 the directory and 600 the files`;
}
