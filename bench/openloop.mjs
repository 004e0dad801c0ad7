// An open-loop load generator: requests go out at a fixed rate whatever the server's answers do, and each one's
// latency is counted from the time it was *scheduled*, not sent. A closed-loop generator (wrk, autocannon, including
// autocannon's overallRate, which paces each connection) waits for an answer before its next request, so a server
// stall delays the requests that would have seen it and the stall vanishes from the percentiles (coordinated
// omission). Here a request that finds no free connection waits in a queue, and that wait is counted.
//
// Raw keep-alive sockets with prebuilt request bytes and a minimal response parser: node:http's client costs too much
// per request to offer tens of thousands per second from one core.
//
// Usage: node bench/openloop.mjs URL KIND RATE SECONDS CONNECTIONS [TOKEN]   (KIND: wake | agent | bare)
// Prints one JSON line: sent, answered, non2xx, errors, the achieved rate, percentiles in ms, the log-bucket
// histogram, and the scheduled times (epoch ms) of the slowest answers, for correlating with the server's own timings.
// Several loads at once from one process: URL, KIND and RATE as comma-separated lists of the same length (each load
// its own connections); the line is then `{"loads": [one summary per load]}`. Two generator processes on one core
// would take turns at it and send late.
import { connect } from 'node:net';

/** Log buckets 5 % wide from 1 µs: percentiles within ~2.5 %, a fixed few hundred counters whatever the range. */
const GROWTH = 1.05;
const LN = Math.log(GROWTH);
export const bucketOf = (us) => (us < 1 ? 0 : Math.floor(Math.log(us) / LN) + 1);
/** The upper edge of a bucket, µs. */
export const bucketTop = (b) => (b === 0 ? 1 : GROWTH ** b);

export class LogHistogram {
  counts = [];
  n = 0;
  max = 0;
  record(us) {
    const b = bucketOf(us);
    this.counts[b] = (this.counts[b] ?? 0) + 1;
    this.n++;
    if (us > this.max) this.max = us;
  }
  /** The p-th percentile in µs (the upper edge of its bucket, at most the max seen). */
  percentile(p) {
    if (this.n === 0) return Number.NaN;
    const rank = Math.ceil((p / 100) * this.n);
    let seen = 0;
    for (let b = 0; b < this.counts.length; b++) {
      seen += this.counts[b] ?? 0;
      if (seen >= rank) return Math.min(bucketTop(b), this.max);
    }
    return this.max;
  }
}

/**
 * The requests' wake mode: `next-heartbeat` (the ingress benches, whose hookgate runs no heartbeat: they measure the
 * accept), or `now` with OPENLOOP_WAKE_MODE=now (the retention soak: a heartbeat consumes the events, as in service).
 */
const WAKE_MODE = process.env.OPENLOOP_WAKE_MODE === 'now' ? 'now' : 'next-heartbeat';

function requestBytes(url, kind, token, i) {
  const body =
    kind === 'agent'
      ? JSON.stringify({ message: `bench message ${i} @${Date.now()}`, name: 'Bench', wakeMode: WAKE_MODE })
      : JSON.stringify({ text: `bench event ${i}`, mode: WAKE_MODE });
  const auth = token ? `authorization: Bearer ${token}\r\n` : '';
  return Buffer.from(
    `POST ${url.pathname} HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\n${auth}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

/** Splits a keep-alive socket's bytes into answers: status, then content-length or a chunked body's end. */
function responseReader(onAnswer) {
  let buf = Buffer.alloc(0);
  return (chunk) => {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    for (;;) {
      const head = buf.indexOf('\r\n\r\n');
      if (head === -1) return;
      const text = buf.toString('latin1', 0, head);
      const status = Number(text.slice(9, 12));
      const len = /\r\ncontent-length:\s*(\d+)/i.exec(text);
      let end;
      if (len) end = head + 4 + Number(len[1]);
      else if (/\r\ntransfer-encoding:\s*chunked/i.test(text)) {
        const last = buf.indexOf('\r\n0\r\n\r\n', head + 2);
        end = last === -1 ? Number.POSITIVE_INFINITY : last + 7;
      } else end = head + 4;
      if (end > buf.length) return;
      buf = buf.subarray(end);
      onAnswer(status);
    }
  };
}

export async function openLoop({ url, kind, rate, seconds, connections, token }) {
  const u = new URL(url);
  const hist = new LogHistogram();
  // How late the generator itself sent what it could send at once: when this grows, the generator (not the server)
  // is what is slow, and the run says so.
  const late = new LogHistogram();
  const interval = 1000 / rate;
  const total = Math.round(rate * seconds);
  const slowKeep = Math.max(2000, Math.ceil(total / 100));
  const r = { sent: 0, answered: 0, non2xx: 0, errors: 0, queuedMax: 0 };
  const slow = []; // [latency µs, scheduled epoch ms], the `slowKeep` slowest
  let slowFloor = 0;
  const waiting = []; // scheduled times (performance.now ms) of requests that found no free connection
  const idle = [];
  let next = 0;
  const t0 = performance.now() + 50;
  const epoch0 = performance.timeOrigin;
  let finish;
  const finished = new Promise((res) => (finish = res));
  const done = () => r.answered + r.errors >= total && finish();

  let stopped = false;
  const send = (conn, scheduled) => {
    conn.busy = true;
    conn.scheduled = scheduled;
    r.sent++;
    conn.socket.write(requestBytes(u, kind, token, r.sent));
  };
  const perSecondMax = []; // the slowest answer in each second of the run (by answer time), ms
  const answered = (conn, status) => {
    const now = performance.now();
    const us = (now - conn.scheduled) * 1000;
    hist.record(us);
    const second = Math.max(0, Math.floor((now - t0) / 1000));
    if (!(perSecondMax[second] >= us / 1000)) perSecondMax[second] = us / 1000;
    if (us > slowFloor || slow.length < slowKeep) {
      slow.push([us, epoch0 + conn.scheduled]);
      if (slow.length > slowKeep * 2) {
        slow.sort((a, b) => b[0] - a[0]).length = slowKeep;
        slowFloor = slow[slowKeep - 1][0];
      }
    }
    r.answered++;
    conn.busy = false;
    if (status < 200 || status > 299) r.non2xx++;
    free(conn);
    done();
  };
  /** A connection is free: it takes the oldest waiting request, else waits for the next one. */
  const free = (conn) => {
    const queued = waiting.shift();
    if (queued !== undefined) send(conn, queued);
    else idle.push(conn);
  };
  // A connection the server closes (its keep-alive timeout, at low rates) is replaced; a request it was carrying
  // counts as an error.
  const open = () =>
    new Promise((resolve, reject) => {
      const socket = connect({ host: u.hostname, port: Number(u.port), noDelay: true });
      const conn = { socket, scheduled: 0, busy: false };
      socket.on(
        'data',
        responseReader((status) => answered(conn, status)),
      );
      socket.once('connect', () => resolve(conn));
      socket.on('error', () => {});
      socket.once('close', () => {
        if (socket.connecting || stopped) return reject(new Error(`cannot connect to ${url}`));
        const i = idle.indexOf(conn);
        if (i !== -1) idle.splice(i, 1);
        if (conn.busy) {
          r.errors++;
          done();
        }
        open().then(free, () => {});
      });
    });
  for (const c of await Promise.all(Array.from({ length: connections }, open))) idle.push(c);

  // The schedule: each pass sends every request whose time has come; a spin of setImmediate (this process has a core
  // of its own) keeps the lateness of a send to one pass.
  const tick = () => {
    const now = performance.now();
    while (next < total && t0 + next * interval <= now) {
      const scheduled = t0 + next * interval;
      next++;
      const conn = idle.shift(); // oldest first: every connection stays in use, none reaches the keep-alive timeout
      if (conn) {
        late.record((now - scheduled) * 1000);
        send(conn, scheduled);
      } else waiting.push(scheduled);
    }
    if (waiting.length > r.queuedMax) r.queuedMax = waiting.length;
    if (next < total) setImmediate(tick);
  };
  setImmediate(tick);
  // Answers that never come (a dead server): give up a while after the last send.
  const limit = setTimeout(() => finish(), (seconds + 30) * 1000);
  await finished;
  clearTimeout(limit);
  const elapsed = (performance.now() - t0) / 1000;
  const unanswered = total - r.answered - r.errors;
  stopped = true;
  for (const c of idle) c.socket.destroy();
  slow.sort((a, b) => b[0] - a[0]).length = Math.min(slow.length, slowKeep);
  const ms = (us) => us / 1000;
  return {
    openLoop: 1,
    rate,
    seconds,
    connections,
    scheduled: total,
    ...r,
    unanswered,
    achievedRate: r.answered / elapsed,
    p50: ms(hist.percentile(50)),
    p90: ms(hist.percentile(90)),
    p99: ms(hist.percentile(99)),
    p999: ms(hist.percentile(99.9)),
    max: ms(hist.max),
    generatorLateP99: ms(late.percentile(99)),
    generatorLateMax: ms(late.max),
    // [upper edge ms, count] of each non-empty bucket
    histogram: hist.counts.flatMap((c, b) => (c ? [[ms(bucketTop(b)), c]] : [])),
    perSecondMax: Array.from(perSecondMax, (v) => Math.round((v ?? 0) * 1000) / 1000),
    slowest: slow.map(([us, at]) => [Math.round(us) / 1000, Math.round(at)]),
  };
}

/** The command line's loads: URL, KIND and RATE each one value, or comma-separated lists of the same length. */
export function loadsOf(url, kind, rate) {
  const [urls, kinds, rates] = [url, kind, rate].map((v) => v.split(','));
  if (kinds.length !== urls.length || rates.length !== urls.length)
    throw new Error(`URL, KIND and RATE: lists of the same length (${urls.length}, ${kinds.length}, ${rates.length})`);
  return urls.map((u, i) => ({ url: u, kind: kinds[i], rate: Number(rates[i]) }));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [url, kind, rate, seconds, connections, token = ''] = process.argv.slice(2);
  const loads = loadsOf(url, kind, rate).map((l) => ({ ...l, connections: Number(connections), token }));
  // Started by openLoopRound (latency.mjs): its stdin closes when the bench ends, killed or not, and so must this
  // (a generator left behind sends at its rate to a closed port until its heap runs out, on the load's core).
  if (process.env.OPENLOOP_PARENT === '1') process.stdin.on('end', () => process.exit(3)).resume();
  // A second of warm-up at the same rate (both sides' JIT, the connections), not counted; OPENLOOP_WARMUP=0: none.
  if (process.env.OPENLOOP_WARMUP !== '0') await Promise.all(loads.map((l) => openLoop({ ...l, seconds: 1 })));
  const results = await Promise.all(loads.map((l) => openLoop({ ...l, seconds: Number(seconds) })));
  const result = results.length === 1 ? results[0] : { loads: results };
  // Exit once the summary is written: stdout to a pipe is asynchronous, and an hour's summary (per-second arrays) is
  // hundreds of KB, which process.exit alone cut short.
  process.stdout.write(`${JSON.stringify(result)}\n`, () => process.exit(0));
}
