import { setFlagsFromString } from 'node:v8';
import { type ResourceLimits, Worker } from 'node:worker_threads';

let semiSpaceFlagCleared = false;

/**
 * Start a worker from a sibling module, with the V8 heap limits it declares. Built, that is a .js file; from source
 * (tests under tsx) it is .ts and the worker registers tsx first, because Node 20 does not apply `--import` hooks to
 * a worker's entry module.
 *
 * V8's flags are the process's: `--max-semi-space-size` (on the `npm start` line) sizes every isolate made while it
 * is set and overrides a worker's `maxYoungGenerationSizeMb`. The main isolate read it when it was created, so it is
 * cleared before the first worker: each worker then gets the young generation it declares, not the main thread's.
 */
export function startWorker(
  sibling: string,
  base: string,
  workerData: unknown,
  resourceLimits: ResourceLimits,
): Worker {
  if (!semiSpaceFlagCleared) {
    setFlagsFromString('--max-semi-space-size=0');
    semiSpaceFlagCleared = true;
  }
  if (!base.endsWith('.ts')) return new Worker(new URL(`${sibling}.js`, base), { workerData, resourceLimits });
  const entry = new URL(`${sibling}.ts`, base).href;
  const code = `import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(code, { eval: true, workerData, resourceLimits });
}
