#!/usr/bin/env node
// A tiny CLI "agent" for the command provider's tests: run as `node agent.mjs --mode <mode> [options]`.
// Modes:
//   reply     (default) reads stdin, replies "agent: <stdin>" (padded with blank lines, which the provider trims)
//   env       replies a JSON object of HOOKGATE_MODEL, HOOKGATE_THINKING, HOOKGATE_TOKEN, AGENT_SECRET and the cwd
//   fail      writes 20 numbered stderr lines (the last one mentions $AGENT_SECRET), exits with --code (default 2)
//   sleep     writes "<pid>\n<grandchild pid>\n" to --pid-file, then sleeps forever (the grandchild too)
//   stubborn  like sleep, but ignores SIGTERM (only SIGKILL ends it)
//   sleep-once  like sleep when --pid-file does not exist yet, else like reply (a run interrupted, then run again)
//   big       writes --bytes bytes of "x" to stdout
//   no-read   replies "ok" and exits without reading stdin
//   tempfail  exits 75 while the counter in --count-file is below --fail-times (default 1), then replies "recovered"
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const mode = opt('mode', 'reply');

const readStdin = async () => {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  return Buffer.concat(chunks).toString('utf8');
};

const sleepForever = (ignoreTerm) => {
  const grandchild = spawn(
    process.execPath,
    ['-e', `${ignoreTerm ? "process.on('SIGTERM', () => {});" : ''} setInterval(() => {}, 1000);`],
    { stdio: 'ignore' },
  );
  if (ignoreTerm) process.on('SIGTERM', () => {});
  writeFileSync(opt('pid-file'), `${process.pid}\n${grandchild.pid}\n`);
  setInterval(() => {}, 1000);
};

switch (mode) {
  case 'reply': {
    const input = await readStdin();
    process.stdout.write(`\n\nagent: ${input}\n\n`);
    break;
  }
  case 'env': {
    await readStdin();
    const e = process.env;
    process.stdout.write(
      JSON.stringify({
        model: e.HOOKGATE_MODEL,
        thinking: e.HOOKGATE_THINKING,
        token: e.HOOKGATE_TOKEN ?? null,
        secret: e.AGENT_SECRET ?? null,
        cwd: process.cwd(),
      }),
    );
    break;
  }
  case 'fail': {
    await readStdin();
    for (let i = 1; i <= 20; i++) process.stderr.write(`stderr line ${i}\n`);
    process.stderr.write(`fatal: upstream rejected key ${process.env.AGENT_SECRET ?? ''}\n`);
    process.exitCode = Number(opt('code', '2'));
    break;
  }
  case 'sleep-once': {
    if (!existsSync(opt('pid-file'))) {
      sleepForever(false);
      break;
    }
    const input = await readStdin();
    process.stdout.write(`agent: ${input}`);
    break;
  }
  case 'sleep':
  case 'stubborn':
    sleepForever(mode === 'stubborn');
    break;
  case 'big':
    process.stdout.write('x'.repeat(Number(opt('bytes', '2000000'))));
    break;
  case 'no-read':
    process.stdout.write('ok');
    process.exit(0);
    break;
  case 'tempfail': {
    await readStdin();
    const file = opt('count-file');
    const count = existsSync(file) ? Number(readFileSync(file, 'utf8')) : 0;
    writeFileSync(file, String(count + 1));
    if (count < Number(opt('fail-times', '1'))) {
      process.stderr.write('busy, try later\n');
      process.exitCode = 75;
    } else {
      process.stdout.write('recovered');
    }
    break;
  }
  default:
    process.stderr.write(`unknown mode ${mode}\n`);
    process.exitCode = 64;
}
