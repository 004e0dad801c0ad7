// The run pipeline end to end: agent runs through the echo provider to the log channel (a JSONL file).
// 1. throughput: accept `burst` runs as fast as possible, then time until every reply is delivered;
// 2. steady state: accept runs at a fixed `rate` per second and sample the backlog (runs not finished and
//    deliveries not sent) every second: flat means the pipeline keeps up.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import Database from 'better-sqlite3';
import { countRunsIn } from '../dist/store/fresh-runs.js';

const root = new URL('..', import.meta.url).pathname;
const TOKEN = 'bench-token-0123456789abcdef0123456789abcdef';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function pipelineBench({ burst = 3000, rate = 500, seconds = 10 } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'hookgate-pipeline-'));
  const dbPath = join(dir, 'hookgate.db');
  const configFile = join(dir, 'hookgate.json5');
  writeFileSync(
    configFile,
    JSON.stringify({
      gateway: { port: 0 },
      storage: { driver: 'sqlite', path: dbPath },
      hooks: { enabled: true, token: TOKEN },
      // Each summary would otherwise wake the main agent too; heartbeats are not what this measures.
      heartbeat: { every: 'off' },
      agents: { defaults: { model: 'echo/echo', maxConcurrent: 16 } },
      channels: { default: { channel: 'log' }, log: { path: join(dir, 'deliveries.jsonl') } },
    }),
  );
  const child = spawn(process.execPath, [join(root, 'dist/cli/main.js'), 'serve', '--config', configFile], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise((resolve, reject) => {
    child.once('exit', (c) => reject(new Error(`hookgate exited ${c}`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.includes('"hookgate listening"')) resolve(JSON.parse(line).url);
    });
  });
  const db = new Database(dbPath, { readonly: true });
  const count = db.prepare(
    `SELECT ${countRunsIn("('queued', 'running')")} AS runs,
            (SELECT COUNT(*) FROM deliveries WHERE state = 'pending') AS deliveries,
            (SELECT COUNT(*) FROM deliveries WHERE state = 'delivered') AS delivered,
            (SELECT COUNT(*) FROM runs) AS total`,
  );
  const request = (i) => ({
    method: 'POST',
    path: '/hooks/agent',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ message: `pipeline ${i}`, name: 'Bench', wakeMode: 'next-heartbeat' }),
  });
  try {
    // 1. Throughput.
    let i = 0;
    const t0 = performance.now();
    await autocannon({
      url,
      connections: 20,
      amount: burst,
      requests: [{ ...request(0), setupRequest: (r) => ({ ...r, ...request(i++) }) }],
    });
    const accepted = performance.now();
    while (count.get().delivered < burst && performance.now() - t0 < 120_000) await sleep(50);
    const done = performance.now();
    const delivered = count.get().delivered;
    const throughput = {
      runs: burst,
      delivered,
      acceptSeconds: (accepted - t0) / 1000,
      seconds: (done - t0) / 1000,
      runsPerSecond: delivered / ((done - t0) / 1000),
    };

    // 2. Steady state at `rate` accepted runs per second.
    const samples = [];
    const sampler = setInterval(() => samples.push(count.get()), 1000);
    const before = count.get().total;
    const steadyRun = await autocannon({
      url,
      connections: 10,
      overallRate: rate,
      duration: seconds,
      requests: [{ ...request(0), setupRequest: (r) => ({ ...r, ...request(i++) }) }],
    });
    clearInterval(sampler);
    const acceptedRate = (count.get().total - before) / seconds;
    const backlog = samples.map((s) => s.runs + s.deliveries);
    return {
      throughput,
      steady: {
        rate,
        acceptedRate,
        non2xx: steadyRun.non2xx,
        seconds,
        backlog,
        maxBacklog: Math.max(...backlog),
        lastBacklog: backlog.at(-1) ?? 0,
      },
    };
  } finally {
    db.close();
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await pipelineBench({ seconds: Number(process.env.BENCH_SECONDS ?? 10) });
  console.log(JSON.stringify(r, null, 2));
}
