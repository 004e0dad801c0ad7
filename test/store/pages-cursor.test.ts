/**
 * How a received page walks its logs (src/store/pages-cursor.ts): what each block read asks for. Every block read is
 * parsed whole, so a page should read what it shows and not much more; the pages' contents are the shared contract
 * suite's (contract-pages.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type LogBlock,
  type LogReader,
  pageReceivedLogs,
  RECEIVED_BLOCKS_PER_PAGE,
} from '../../src/store/pages-cursor.js';
import { received } from './contract.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

/** A log of `blocks` blocks of `perBlock` accepted records (seq 1 oldest), and the block counts each read asked for. */
function log(blocks: number, perBlock: number): { read: LogReader; asked: number[] } {
  const asked: number[] = [];
  const block = (seq: number): LogBlock => ({
    seq,
    at: T0 + seq * 1000,
    records: Array.from({ length: perBlock }, (_, i) => received({ at: T0 + seq * 1000 - i })),
  });
  const read: LogReader = async (atMost, n) => {
    asked.push(n);
    const out: LogBlock[] = [];
    for (let seq = Math.min(atMost, blocks); seq >= 1 && out.length < n; seq--) out.push(block(seq));
    return out;
  };
  return { read, asked };
}

const none: LogReader = async () => [];

describe('received pages: block reads', () => {
  it('fills the usual page from the first small read instead of parsing 32 blocks for it', async () => {
    const { read, asked } = log(1000, 40);
    const page = await pageReceivedLogs({ records: read, refusals: none }, { limit: 50 });
    assert.equal(page.items.length, 50);
    assert.ok(page.nextCursor);
    assert.deepEqual(asked, [2]);
  });

  it('doubles the reads up to 32 blocks for a filter that matches nothing, within the page budget', async () => {
    const { read, asked } = log(1000, 40);
    const page = await pageReceivedLogs({ records: read, refusals: none }, { limit: 50, outcome: 'rejected' });
    assert.equal(page.items.length, 0);
    assert.ok(page.nextCursor, 'stopped by the budget: a cursor to go on');
    assert.deepEqual(asked.slice(0, 6), [2, 4, 8, 16, 32, 32]);
    assert.equal(
      asked.reduce((a, b) => a + b, 0),
      RECEIVED_BLOCKS_PER_PAGE,
    );
  });

  it('walks a log shorter than its first reads to the end, with no cursor', async () => {
    const { read } = log(3, 5);
    const page = await pageReceivedLogs({ records: read, refusals: none }, { limit: 50 });
    assert.equal(page.items.length, 15);
    assert.equal(page.nextCursor, null);
  });
});
