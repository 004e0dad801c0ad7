import { type ResourceLimits, Worker } from 'node:worker_threads';

/**
 * Start a worker from a sibling module. Built, that is a .js file; from source (tests under tsx) it is .ts and
 * the worker registers tsx first, because Node 20 does not apply `--import` hooks to a worker's entry module.
 */
export function startWorker(
  sibling: string,
  base: string,
  workerData: unknown,
  resourceLimits?: ResourceLimits,
): Worker {
  if (!base.endsWith('.ts'))
    return new Worker(new URL(`${sibling}.js`, base), { workerData, ...(resourceLimits ? { resourceLimits } : {}) });
  const entry = new URL(`${sibling}.ts`, base).href;
  const code = `import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(code, { eval: true, workerData, ...(resourceLimits ? { resourceLimits } : {}) });
}
