import { setFlagsFromString } from 'node:v8';

/**
 * How far V8 lets the old generation grow past what survived the last full GC before it collects again, in percent.
 * V8's default grows it up to 4× on a small heap: under load (garbage promoted by many connections' requests and the
 * run worker's batches) the old space grows to several times what is live, and peak RSS with it. At 20 % it stays
 * close to the live set for no measurable change in CPU per request (the full GCs are more frequent but each marks
 * the same small live set). docs/operations.md, "Memory".
 */
export const HEAP_GROWING_PERCENT = 20;

/**
 * For the service only (`hookgate serve`), called before the server's modules load. V8 reads this flag each time it
 * sets the next GC limit, so setting it from inside the process works (unlike --max-semi-space-size, which is read
 * once when the heap is created: that one is on the `npm start` line and in the systemd unit instead). An operator's
 * own --heap-growing-percent (node flag or NODE_OPTIONS) wins.
 */
export function tuneHeapForService(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions = process.env.NODE_OPTIONS ?? '',
): boolean {
  const given = [...execArgv, ...nodeOptions.split(/\s+/)].some((a) => /^--heap[-_]growing[-_]percent(=|$)/.test(a));
  if (given) return false;
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  return true;
}
