/**
 * kill -9 under concurrent load, counted: several clients post wakes (each with its own idempotency key), the
 * process is killed mid-burst, restarted, and every request that got no answer is sent again with the same key (what
 * a sender that retries does). Afterwards every request answered 200 must be in the store exactly once. Shared by
 * test/reliability/kill-load.test.ts (a few rounds) and `npm run soak` (10 trials).
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import type { Hookgate } from './server.js';

export interface KillLoadResult {
  rounds: number;
  sent: number;
  answered200: number;
  /** Answered 200, not in the store after the restarts. */
  missing: number;
  /** Stored more than once (one idempotency key, several events). */
  duplicates: number;
  /** Answers other than 200 (and not a dropped connection): none expected. */
  refused: number;
  /** Requests whose connection died with the process, sent again after the restart. */
  retried: number;
}

/** Wake texts stored, with their count (consumed or pending). */
function storedTexts(hg: Hookgate): Map<string, number> {
  const db = new Database(join(hg.dir, 'data/hookgate.db'), { readonly: true });
  try {
    const out = new Map<string, number>();
    for (const r of db.prepare('SELECT text FROM system_events').all() as Array<{ text: string }>)
      out.set(r.text, (out.get(r.text) ?? 0) + 1);
    return out;
  } finally {
    db.close();
  }
}

/**
 * `rounds` bursts of `clients` concurrent senders; each burst is killed after `killAfter` answers (give or take what
 * is in flight). The server must run with the harness's config dir layout (`data/hookgate.db`).
 */
export async function killUnderLoad(
  hg: Hookgate,
  opts: { rounds: number; clients: number; killAfter: number; tag?: string },
): Promise<KillLoadResult> {
  const accepted = new Set<string>();
  let sent = 0;
  let refused = 0;
  let retried = 0;
  const tag = opts.tag ?? 'kill';
  for (let round = 0; round < opts.rounds; round++) {
    let answered = 0;
    let killed: Promise<void> | undefined;
    // Clients keep sending until the process is gone, so requests are in flight when it dies.
    let dead = false;
    const unanswered: string[] = [];
    const client = async (c: number) => {
      for (let n = 0; !dead; n++) {
        const text = `${tag}-r${round}-c${c}-${n}`;
        sent++;
        try {
          const r = await hg.post('/hooks/wake', { text, mode: 'next-heartbeat' }, { 'idempotency-key': text });
          answered++;
          if (r.status === 200) accepted.add(text);
          else refused++;
        } catch {
          unanswered.push(text); // the connection died with the process: never promised, so sent again below
        }
        if (answered >= opts.killAfter && !killed) killed = hg.kill9().then(() => void (dead = true));
      }
    };
    await Promise.all(Array.from({ length: opts.clients }, (_, c) => client(c)));
    await killed;
    await hg.restart();
    retried += unanswered.length;
    for (const text of unanswered) {
      const r = await hg.post('/hooks/wake', { text, mode: 'next-heartbeat' }, { 'idempotency-key': text });
      if (r.status === 200) accepted.add(text);
      else refused++;
    }
  }
  const stored = storedTexts(hg);
  let missing = 0;
  for (const text of accepted) if (!stored.has(text)) missing++;
  let duplicates = 0;
  for (const count of stored.values()) if (count > 1) duplicates += count - 1;
  return { rounds: opts.rounds, sent, answered200: accepted.size, missing, duplicates, refused, retried };
}
