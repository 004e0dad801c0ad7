/**
 * The pure parts of the PostgreSQL counting bench (bench/pg-wire.mjs, bench/pg-counts.mjs): the wire reader's
 * counts from hand-made protocol bytes, fed whole and one byte at a time, and the pg_stat_statements summary.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fromRoot } from '../support/paths.js';

const wire = await import(fromRoot('bench/pg-wire.mjs'));
const counts = await import(fromRoot('bench/pg-counts.mjs'));

const cstr = (s: string) => Buffer.concat([Buffer.from(s, 'utf8'), Buffer.from([0])]);
function msg(type: string, body: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}
function untyped(code: number, rest: Buffer = Buffer.alloc(0)): Buffer {
  const b = Buffer.alloc(8);
  b.writeInt32BE(8 + rest.length, 0);
  b.writeInt32BE(code, 4);
  return Buffer.concat([b, rest]);
}
const ready = (status: string) => msg('Z', Buffer.from(status, 'latin1'));
const done = (tag: string) => msg('C', cstr(tag));
const parse = (name: string, sql: string) => msg('P', Buffer.concat([cstr(name), cstr(sql), Buffer.from([0, 0])]));
const bind = (stmt: string) => msg('B', Buffer.concat([cstr(''), cstr(stmt), Buffer.alloc(6)]));
const execute = () => msg('E', Buffer.concat([cstr(''), Buffer.alloc(4)]));

/** A session: start-up; an unnamed statement; a named one, parsed then reused; BEGIN … COMMIT; a failed statement. */
function session(): { client: Buffer; server: Buffer } {
  const client = Buffer.concat([
    untyped(196608, Buffer.concat([cstr('user'), cstr('postgres'), Buffer.from([0])])),
    parse('', 'UPDATE t SET x = $1'),
    bind(''),
    execute(),
    msg('S'),
    parse('s1', 'SELECT $1'),
    bind('s1'),
    execute(),
    msg('S'),
    bind('s1'),
    execute(),
    msg('S'),
    msg('Q', cstr('BEGIN')),
    msg('Q', cstr('INSERT INTO t VALUES (1)')),
    msg('Q', cstr('COMMIT')),
    msg('Q', cstr('SELECT 1/0')),
  ]);
  const server = Buffer.concat([
    msg('R', Buffer.alloc(4)),
    msg('S', Buffer.concat([cstr('server_version'), cstr('15')])),
    msg('K', Buffer.alloc(8)),
    ready('I'),
    msg('1'),
    msg('2'),
    done('UPDATE 1'),
    ready('I'),
    msg('1'),
    msg('2'),
    msg('D', Buffer.alloc(300)),
    done('SELECT 1'),
    ready('I'),
    msg('2'),
    msg('D', Buffer.alloc(300)),
    done('SELECT 1'),
    ready('I'),
    done('BEGIN'),
    ready('T'),
    done('INSERT 0 1'),
    ready('T'),
    done('COMMIT'),
    ready('I'),
    msg('E', cstr('SERROR')),
    ready('I'),
  ]);
  return { client, server };
}

describe('bench/pg-wire.mjs: counting the protocol', () => {
  const expected = {
    connections: 1,
    tls: 0,
    roundTrips: 7,
    simpleQueries: 4,
    executes: 3,
    parses: 2,
    namedParses: 1,
    binds: 3,
    preparedBinds: 2,
    commits: 4,
    rollbacks: 1,
    runClaims: 0,
    emptyRunClaims: 0,
    deliveryClaims: 0,
    emptyDeliveryClaims: 0,
  };

  it('counts round trips, statements, parses (named or not), prepared executions and commits', () => {
    const c = wire.emptyCounts();
    const conn = wire.connectionCounter(c);
    const { client, server } = session();
    conn.client(client);
    conn.server(server);
    const { bytesIn, bytesOut, ...rest } = c;
    assert.deepEqual(rest, expected);
    assert.equal(bytesOut, client.length);
    assert.equal(bytesIn, server.length);
  });

  it('counts the same when every message arrives split across chunks', () => {
    const c = wire.emptyCounts();
    const conn = wire.connectionCounter(c);
    const { client, server } = session();
    for (let i = 0; i < client.length; i++) conn.client(client.subarray(i, i + 1));
    for (let i = 0; i < server.length; i += 7) conn.server(server.subarray(i, i + 7));
    const { bytesIn, bytesOut, ...rest } = c;
    assert.deepEqual(rest, expected);
  });

  it('a failed transaction ended by COMMIT is a rollback; a connection that turns to TLS is no longer read', () => {
    const c = wire.emptyCounts();
    const conn = wire.connectionCounter(c);
    conn.client(untyped(196608));
    conn.server(ready('I'));
    conn.client(Buffer.concat([msg('Q', cstr('BEGIN')), msg('Q', cstr('SELECT 1/0')), msg('Q', cstr('COMMIT'))]));
    conn.server(
      Buffer.concat([done('BEGIN'), ready('T'), msg('E', cstr('SERROR')), ready('E'), done('ROLLBACK'), ready('I')]),
    );
    assert.equal(c.commits, 0);
    assert.equal(c.rollbacks, 1);

    const t = wire.emptyCounts();
    const tls = wire.connectionCounter(t);
    tls.client(untyped(80877103));
    tls.server(Buffer.from('S'));
    tls.client(Buffer.from('\x16\x03\x01 random TLS bytes'));
    tls.server(Buffer.from('\x16\x03\x03 more'));
    assert.equal(t.tls, 1);
    assert.equal(t.roundTrips, 0);
  });

  it("counts hookgate's claims, and those that came back empty, by the named statement its rows and tag answer", () => {
    const c = wire.emptyCounts();
    const conn = wire.connectionCounter(c);
    conn.client(untyped(196608));
    conn.server(ready('I'));
    const exchange = (stmt: string, tag: string) => {
      conn.client(Buffer.concat([bind(stmt), execute(), msg('S')]));
      conn.server(Buffer.concat([msg('2'), done(tag), ready('I')]));
    };
    // A run claim answers its runs (each with how far the claim walked), or one row without a run (its first column).
    const row = (first: string | null) => {
      const head = Buffer.alloc(6);
      head.writeInt16BE(2, 0);
      head.writeInt32BE(first === null ? -1 : Buffer.byteLength(first), 2);
      return msg('D', Buffer.concat([head, Buffer.from(first ?? ''), Buffer.from([0, 0, 0, 1, 0x37])]));
    };
    const runClaim = (rows: Buffer[]) => {
      conn.client(Buffer.concat([bind('hg_claim_runs'), execute(), msg('S')]));
      conn.server(Buffer.concat([msg('2'), ...rows, done(`SELECT ${rows.length}`), ready('I')]));
    };
    runClaim([row('41'), row('42')]); // two runs leased
    runClaim([row(null)]); // nothing leased
    runClaim([row('43')]); // one run, and the walk's figures in its row
    runClaim([row(null)]);
    exchange('hg_claim_deliveries', 'UPDATE 0');
    exchange('hg_claim_deliveries', 'UPDATE 10');
    exchange('hg_get_run', 'SELECT 0'); // not a claim
    conn.client(Buffer.concat([bind('hg_get_run'), execute(), msg('S')]));
    conn.server(Buffer.concat([msg('2'), row('44'), done('SELECT 1'), ready('I')])); // a row, not a claim's
    exchange('', 'UPDATE 0'); // unnamed: not hookgate's claim
    // A failed claim answers no tag: neither a claim counted nor an empty one.
    conn.client(Buffer.concat([bind('hg_claim_runs'), execute(), msg('S')]));
    conn.server(Buffer.concat([msg('E', cstr('SERROR')), ready('I')]));
    conn.client(msg('Q', cstr('SELECT 1')));
    conn.server(Buffer.concat([done('UPDATE 0'), ready('I')]));
    assert.deepEqual(
      {
        runs: c.runClaims,
        emptyRuns: c.emptyRunClaims,
        deliveries: c.deliveryClaims,
        emptyDeliveries: c.emptyDeliveryClaims,
      },
      { runs: 4, emptyRuns: 2, deliveries: 2, emptyDeliveries: 1 },
    );
  });

  it('diffCounts subtracts snapshots key by key', () => {
    assert.deepEqual(wire.diffCounts({ roundTrips: 10, commits: 4 }, { roundTrips: 3, commits: 4 }), {
      roundTrips: 7,
      commits: 0,
    });
  });
});

describe('bench/pg-counts.mjs: pg_stat_statements summary', () => {
  it('merges rows of the same text and level, keeps nested statements apart, and sorts by calls and by time', () => {
    const s = counts.summariseStatements([
      {
        query: 'SELECT hookgate_accept($1::jsonb, $2) AS r',
        toplevel: true,
        calls: '10',
        total_exec_time: 50,
        rows: '10',
      },
      {
        query: 'INSERT INTO system_events\n   (id) VALUES ($1)',
        toplevel: false,
        calls: '200',
        total_exec_time: 30,
        rows: '200',
      },
      { query: 'BEGIN', toplevel: true, calls: '40', total_exec_time: 0.4, rows: '0' },
      { query: 'BEGIN', toplevel: true, calls: '2', total_exec_time: 0.1, rows: '0' },
      { query: 'UPDATE runs SET x = $1', toplevel: true, calls: '40', total_exec_time: 8, rows: '40' },
    ]);
    assert.equal(s.statements, 92);
    assert.equal(s.nested, 200);
    assert.equal(s.execMs, 58.5);
    assert.deepEqual(
      s.byCalls.map((x: { query: string; calls: number; nested: boolean }) => [x.query, x.calls, x.nested]),
      [
        ['INSERT INTO system_events (id) VALUES ($1)', 200, true],
        ['BEGIN', 42, false],
        ['UPDATE runs SET x = $1', 40, false],
        ['SELECT hookgate_accept($1::jsonb, $2) AS r', 10, false],
      ],
    );
    assert.deepEqual(
      s.byTime.map((x: { query: string }) => x.query),
      ['SELECT hookgate_accept($1::jsonb, $2) AS r', 'UPDATE runs SET x = $1', 'BEGIN'],
    );
  });

  it('perOp divides by the operations, or by seconds for the idle phase', () => {
    const m = {
      ops: 4,
      seconds: 2,
      serverCommits: 8,
      serverRollbacks: 0,
      pgCpuOwn: 400,
      pgCpuAll: 800,
      hookgateCpu: 40,
      wire: {
        ...wire.emptyCounts(),
        roundTrips: 12,
        simpleQueries: 2,
        executes: 10,
        preparedBinds: 6,
        commits: 8,
        parses: 4,
        runClaims: 6,
        emptyRunClaims: 2,
      },
      statements: { statements: 12, nested: 4, execMs: 2, byCalls: [], byTime: [] },
    };
    const p = counts.perOp(m);
    assert.equal(p.roundTrips, 3);
    assert.equal(p.preparedExecutes, 1.5);
    assert.equal(p.unpreparedExecutes, 1.5);
    assert.equal(p.statements, 3);
    assert.equal(p.runClaims, 1.5);
    assert.equal(p.emptyRunClaims, 0.5);
    assert.equal(counts.perOp(m, m.seconds).pgCpuOwn, 200);
  });

  it('shortQuery puts a statement on one line and cuts it', () => {
    assert.equal(counts.shortQuery('SELECT\n   a,\tb  FROM t', 12), 'SELECT a, b…');
  });
});
