/**
 * The cursors of the admin store's pages (pages.ts), shared by both drivers: opaque to callers, base64url JSON inside.
 * Runs and deliveries page by `seq` (newest first: the next page is `seq < cursor`). Received records live in two
 * logs of immutable blocks (received_log: one block per committed batch; refusal_log: one block per window of
 * counts), merged newest first: the cursor holds the position in each log, so a page never loses or repeats a record
 * whatever arrives meanwhile (new records are newer than any cursor and appear on a fresh first page).
 */
import { HookgateError } from '../errors.js';
import type { ReceivedHook } from './types.js';
import type { Page, ReceivedRecord } from './pages.js';

/** The caller's mistake: answered 400 `invalid_query` naming `cursor`. */
function badCursor(): HookgateError {
  return new HookgateError('invalid_query', 'cursor: not a cursor of this list (pass back nextCursor as it was given)');
}

function encode(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

function decode(cursor: string): unknown {
  if (cursor.length > 200 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw badCursor();
  try {
    return JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw badCursor();
  }
}

/** The lists paged by `seq`. */
export type SeqList = 'runs' | 'deliveries' | 'audit';

const isSeq = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

/** A `seq` cursor of one list (`kind` keeps a runs cursor from being used on deliveries). */
export function seqCursor(kind: SeqList, seq: number): string {
  return encode({ k: kind, s: seq });
}

/** The seq to page below; MAX_SAFE_INTEGER when there is no cursor (the first page). */
export function seqFromCursor(kind: SeqList, cursor: string | undefined): number {
  if (cursor === undefined) return Number.MAX_SAFE_INTEGER;
  const v = decode(cursor) as { k?: unknown; s?: unknown } | null;
  if (!v || typeof v !== 'object' || v.k !== kind || !isSeq(v.s)) throw badCursor();
  return v.s;
}

/** Rows fetched `limit + 1` at a time, each with its seq: the page and its cursor. */
export function seqPage<T>(kind: SeqList, rows: Array<{ seq: number; item: T }>, limit: number): Page<T> {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return {
    items: items.map((r) => r.item),
    nextCursor: rows.length > limit && last ? seqCursor(kind, last.seq) : null,
  };
}

/** Where a log was left: the next record is in the block `seq` (or an older one) at index `i`, newest first. */
export interface LogPosition {
  seq: number;
  i: number;
}

/** One block of a log, its records newest first. */
export interface LogBlock {
  seq: number;
  records: ReceivedHook[];
  /** The time of the block's newest record, when the log stores it: known even for a block not read out. */
  at?: number;
}

/**
 * Blocks with `seq <= atMost`, newest first, at most `n`. `refusedOnly`: the page wants refused records alone, so a
 * block that cannot hold one may come back without its records (not parsed).
 */
export type LogReader = (atMost: number, n: number, refusedOnly: boolean) => Promise<LogBlock[]>;

const START: LogPosition = { seq: Number.MAX_SAFE_INTEGER, i: 0 };
/**
 * Blocks read per round trip while walking a log: 2 at first, doubling up to 32. A block holds a committed batch, tens
 * of records under load, so the usual page (50, unfiltered) is filled by the first read; every block read is parsed
 * whole, and 32 at once made each such page parse some 1,400 records for 50 (garbage that raised the admin read
 * thread's resident memory by ~7 MiB). A filter that matches little reaches 32 per read after four reads.
 */
const FIRST_BLOCKS_PER_READ = 2;
const MAX_BLOCKS_PER_READ = 32;
/**
 * Blocks a page reads at most from each log: a filter that matches few records (outcome=rejected: refusals are
 * counted in refusal_log, received_log holds almost none) then ends the page early, with a cursor where it stopped,
 * instead of reading every block the store holds. With the records of one committed batch per block, 256 blocks are at
 * least 256 requests, and thousands under load.
 */
export const RECEIVED_BLOCKS_PER_PAGE = 256;
/** How far out of time order blocks may be committed (concurrent batches): received_log's `at` is about, not exactly, in seq order. */
export const OUT_OF_ORDER_MS = 60_000;

/** A log walked newest first from a position, skipping records that do not match. */
class LogStream {
  private blocks: LogBlock[] = [];
  private exhausted = false;
  private nextRead: number;
  private blocksPerRead = FIRST_BLOCKS_PER_READ;
  private head: { rec: ReceivedRecord; seq: number; i: number } | undefined;
  /** Set when the page's budget ran out before this log found its next match or its end. */
  stopped = false;
  /** The newest record time of the last block walked: what is left of the log is older (bar OUT_OF_ORDER_MS). */
  private walkedTo = Number.MAX_SAFE_INTEGER;

  constructor(
    private readonly read: LogReader,
    private readonly prefix: string,
    public pos: LogPosition,
    private readonly match: (r: ReceivedHook) => boolean,
    private readonly refusedOnly: boolean,
    /** Blocks this page may still read from this log. */
    private budget = RECEIVED_BLOCKS_PER_PAGE,
  ) {
    this.nextRead = pos.seq;
  }

  /** Once stopped: the time a record of the other log must pass to be surely newer than any left in this one. */
  get newerThan(): number {
    return this.stopped ? this.walkedTo + OUT_OF_ORDER_MS : Number.NEGATIVE_INFINITY;
  }

  /** The next matching record (not consumed). Non-matching records on the way are consumed: they are never shown. */
  async peek(): Promise<ReceivedRecord | undefined> {
    if (this.head) return this.head.rec;
    for (;;) {
      if (!this.blocks.length) {
        if (this.exhausted || this.stopped) return undefined;
        if (this.budget <= 0) {
          this.stopped = true;
          return undefined;
        }
        const n = Math.min(this.blocksPerRead, this.budget);
        this.blocksPerRead = Math.min(this.blocksPerRead * 2, MAX_BLOCKS_PER_READ);
        this.budget -= n;
        const got = await this.read(this.nextRead, n, this.refusedOnly);
        if (got.length < n) this.exhausted = true;
        if (!got.length) return undefined;
        this.blocks = got;
        this.nextRead = got[got.length - 1]!.seq - 1;
      }
      const block = this.blocks[0]!;
      const newest = block.at ?? block.records[0]?.at;
      if (newest !== undefined && newest < this.walkedTo) this.walkedTo = newest;
      const i = block.seq === this.pos.seq ? this.pos.i : 0;
      if (i >= block.records.length) {
        this.blocks.shift();
        this.pos = { seq: block.seq - 1, i: 0 };
        continue;
      }
      const rec = block.records[i]!;
      if (!this.match(rec)) {
        this.pos = { seq: block.seq, i: i + 1 };
        continue;
      }
      this.head = { rec: { ...rec, id: `${this.prefix}${block.seq}.${i}` }, seq: block.seq, i };
      return this.head.rec;
    }
  }

  pop(): void {
    if (!this.head) return;
    this.pos = { seq: this.head.seq, i: this.head.i + 1 };
    this.head = undefined;
  }
}

export interface ReceivedLogs {
  /** received_log: one record per request answered (refusals may be counted in refusal_log instead). */
  records: LogReader;
  /** refusal_log: counts of refusals per window (each a record with `count`). */
  refusals: LogReader;
}

/** A page of received records: both logs merged newest first from the cursor's positions. */
export async function pageReceivedLogs(
  logs: ReceivedLogs,
  q: { limit: number; cursor?: string; outcome?: 'accepted' | 'rejected'; path?: string },
): Promise<Page<ReceivedRecord>> {
  let r = START;
  let c = START;
  if (q.cursor !== undefined) {
    const v = decode(q.cursor) as { k?: unknown; r?: unknown; c?: unknown } | null;
    const pos = (p: unknown): LogPosition => {
      if (!Array.isArray(p) || p.length !== 2 || !isSeq(p[0]) || !isSeq(p[1])) throw badCursor();
      return { seq: p[0], i: p[1] };
    };
    if (!v || typeof v !== 'object' || v.k !== 'received') throw badCursor();
    r = pos(v.r);
    c = pos(v.c);
  }
  const match = (rec: ReceivedHook) =>
    (q.outcome === undefined || (q.outcome === 'accepted') === rec.status < 400) &&
    (q.path === undefined || rec.path === q.path);
  const none: LogReader = async () => [];
  const rejected = q.outcome === 'rejected';
  const records = new LogStream(logs.records, 'r', r, match, rejected);
  // Counts are refusals only: an `accepted` page never walks them.
  const refusals = new LogStream(q.outcome === 'accepted' ? none : logs.refusals, 'c', c, match, rejected);
  const items: ReceivedRecord[] = [];
  while (items.length < q.limit) {
    const a = await records.peek();
    const b = await refusals.peek();
    // A log stopped by the budget may still hold newer records than the other's head: that head waits for the next
    // page unless it is surely newer than anything left unread.
    const okA = a && a.at > refusals.newerThan ? a : undefined;
    const okB = b && b.at > records.newerThan ? b : undefined;
    const pick = okA && (!okB || okA.at >= okB.at) ? records : okB ? refusals : undefined;
    if (!pick) break;
    items.push((await pick.peek())!);
    pick.pop();
  }
  const more =
    records.stopped ||
    refusals.stopped ||
    (await records.peek()) !== undefined ||
    (await refusals.peek()) !== undefined;
  return {
    items,
    nextCursor: more
      ? encode({ k: 'received', r: [records.pos.seq, records.pos.i], c: [refusals.pos.seq, refusals.pos.i] })
      : null,
  };
}
