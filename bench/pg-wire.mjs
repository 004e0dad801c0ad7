// A counting TCP proxy between hookgate and PostgreSQL (bench/pg-counts.mjs): it forwards every byte unchanged and
// reads the protocol messages on the way, so round trips, statements and prepared-statement use are counted exactly
// from what the client sent and the server answered, whatever the client library, with nothing enabled on the server.
//   - round trip: a ReadyForQuery ('Z') the client waited for (the one that ends a connection's start-up not counted);
//   - statements: simple Query ('Q') and Execute ('E') messages;
//   - parses: Parse ('P') messages, `named` when they create a named prepared statement (parsed once per connection);
//   - prepared executions: Bind ('B') messages naming a prepared statement (no Parse for that execution);
//   - commits / rollbacks: a ReadyForQuery back to idle ('I') after a command completed or failed, told apart by the
//     last CommandComplete tag (ROLLBACK) or an ErrorResponse in between (as pg_stat_database counts them);
//   - claims, and claims that came back empty: executions of hookgate's named claim statements (`hg_claim_runs`,
//     `hg_claim_deliveries`) and those that leased nothing: a delivery claim whose CommandComplete tag says 0 rows
//     (`UPDATE 0`), a run claim none of whose rows (DataRow) holds a run (its first column, the run's seq, is null in
//     the row that only says how far the claim walked). A client sends one query per connection at a time (it waits
//     for ReadyForQuery), so the statement a tag or a row answers is the last one bound.
// A connection that switches to TLS (SSLRequest answered 'S') is forwarded but no longer read (`tls` counts them).
import { createConnection, createServer } from 'node:net';

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;

export function emptyCounts() {
  return {
    connections: 0,
    tls: 0,
    roundTrips: 0,
    simpleQueries: 0,
    executes: 0,
    parses: 0,
    namedParses: 0,
    binds: 0,
    preparedBinds: 0,
    commits: 0,
    rollbacks: 0,
    runClaims: 0,
    emptyRunClaims: 0,
    deliveryClaims: 0,
    emptyDeliveryClaims: 0,
    bytesIn: 0,
    bytesOut: 0,
  };
}

export function diffCounts(after, before) {
  const out = {};
  for (const k of Object.keys(after)) out[k] = after[k] - (before[k] ?? 0);
  return out;
}

const cstring = (buf, at) => {
  const end = buf.indexOf(0, at);
  return { text: buf.toString('utf8', at, end), next: end + 1 };
};

/**
 * A reader of one direction of the stream. `untyped` messages first (the start-up: length, then body); then typed ones
 * (1 type byte, length including itself, body). `onMessage(type, body)` gets the bodies of the types in `wanted` only;
 * the others are skipped without being buffered.
 */
function streamReader(wanted, onMessage) {
  let pending = Buffer.alloc(0);
  let skip = 0;
  let untyped = 0; // untyped messages still expected (the client's start-up), or a single byte (the SSL answer): -1
  const reader = {
    expectUntyped(n = 1) {
      untyped = n;
    },
    expectByte() {
      untyped = -1;
    },
    stopped: false,
    feed(chunk) {
      if (reader.stopped) return;
      let buf = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      let at = 0;
      if (skip > 0) {
        const n = Math.min(skip, buf.length);
        skip -= n;
        at = n;
      }
      while (!reader.stopped) {
        if (untyped === -1) {
          if (buf.length - at < 1) break;
          untyped = 0;
          onMessage('ssl-answer', buf.subarray(at, at + 1));
          at += 1;
          continue;
        }
        if (untyped > 0) {
          if (buf.length - at < 8) break;
          const len = buf.readInt32BE(at);
          if (buf.length - at < len) break;
          untyped--;
          onMessage('startup', buf.subarray(at + 4, at + len));
          at += len;
          continue;
        }
        if (buf.length - at < 5) break;
        const type = String.fromCharCode(buf[at]);
        const len = buf.readInt32BE(at + 1);
        if (!wanted.has(type)) {
          onMessage(type, undefined);
          const avail = buf.length - at - 5;
          if (avail >= len - 4) at += 1 + len;
          else {
            skip = len - 4 - avail;
            at = buf.length;
          }
          continue;
        }
        if (buf.length - at < 1 + len) break;
        onMessage(type, buf.subarray(at + 5, at + 1 + len));
        at += 1 + len;
      }
      pending = at >= buf.length ? Buffer.alloc(0) : Buffer.from(buf.subarray(at));
      buf = undefined;
    },
  };
  return reader;
}

/** The counter of one connection: `client(chunk)` and `server(chunk)` are fed the bytes of each direction. */
export function connectionCounter(counts) {
  counts.connections++;
  let started = false; // the first ReadyForQuery (end of start-up) seen
  let commandDone = false;
  let failed = false;
  let lastTag = '';
  let bound = ''; // the named statement of the query under way ('' when unnamed, or none)
  let runsLeased = 0; // rows of the run claim under way that hold a run
  const server = streamReader(new Set(['Z', 'C', 'D']), (type, body) => {
    if (type === 'ssl-answer') {
      if (body[0] === 0x53) {
        counts.tls++;
        server.stopped = true;
        client.stopped = true;
      }
      return;
    }
    if (type === 'E') failed = true;
    else if (type === 'D') {
      // Column count (int16), then the first column's length (int32, -1: null).
      if (bound === 'hg_claim_runs' && body.length >= 6 && body.readInt32BE(2) !== -1) runsLeased++;
    } else if (type === 'C') {
      commandDone = true;
      lastTag = cstring(body, 0).text;
      if (bound === 'hg_claim_runs') {
        counts.runClaims++;
        if (runsLeased === 0) counts.emptyRunClaims++;
      } else if (bound === 'hg_claim_deliveries') {
        counts.deliveryClaims++;
        if (lastTag.endsWith(' 0')) counts.emptyDeliveryClaims++;
      }
      runsLeased = 0;
      bound = '';
    } else if (type === 'Z') {
      bound = '';
      runsLeased = 0;
      if (!started) {
        started = true;
        return;
      }
      counts.roundTrips++;
      if (body[0] === 0x49 /* I */ && (commandDone || failed)) {
        if (failed || lastTag === 'ROLLBACK') counts.rollbacks++;
        else counts.commits++;
      }
      if (body[0] === 0x49) {
        commandDone = false;
        failed = false;
      }
    }
  });
  const client = streamReader(new Set(['P', 'B']), (type, body) => {
    if (type === 'startup') {
      const code = body.readInt32BE(0);
      if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
        client.expectUntyped(1); // the real start-up follows
        server.expectByte();
      }
      return;
    }
    if (type === 'Q') counts.simpleQueries++;
    else if (type === 'E') counts.executes++;
    else if (type === 'P') {
      counts.parses++;
      if (cstring(body, 0).text !== '') counts.namedParses++;
    } else if (type === 'B') {
      counts.binds++;
      const portal = cstring(body, 0);
      bound = cstring(body, portal.next).text;
      if (bound !== '') counts.preparedBinds++;
    }
  });
  client.expectUntyped(1);
  return {
    client(chunk) {
      counts.bytesOut += chunk.length;
      client.feed(chunk);
    },
    server(chunk) {
      counts.bytesIn += chunk.length;
      server.feed(chunk);
    },
  };
}

/** Listen on 127.0.0.1 (a free port), forward to `target` ({ host, port }); `counts` is updated as bytes pass. */
export async function startCountingProxy(target) {
  const counts = emptyCounts();
  const sockets = new Set();
  const server = createServer((down) => {
    const up = createConnection(target);
    const c = connectionCounter(counts);
    sockets.add(down).add(up);
    down.on('data', (chunk) => {
      c.client(chunk);
      if (!up.write(chunk)) down.pause();
    });
    up.on('drain', () => down.resume());
    up.on('data', (chunk) => {
      c.server(chunk);
      if (!down.write(chunk)) up.pause();
    });
    down.on('drain', () => up.resume());
    const end = () => {
      down.destroy();
      up.destroy();
      sockets.delete(down);
      sockets.delete(up);
    };
    for (const s of [down, up]) {
      s.on('error', end);
      s.on('close', end);
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: server.address().port,
    counts,
    snapshot: () => ({ ...counts }),
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
