/** Options several commands share, each defined once so their help text and validation stay the same everywhere. */
import { InvalidArgumentError, Option } from 'commander';

export const configOption = () =>
  new Option(
    '-c, --config <file>',
    'config file (default: $HOOKGATE_CONFIG, else ./hookgate.json5, else the embedded default)',
  );

/** A repeatable option's values, in order. */
export const collect = (value: string, previous: string[]) => [...previous, value];

export const jsonOption = () => new Option('--json', 'print JSON (for scripts) instead of a table or text');

/** A positive integer, refused with a clear message before it reaches SQL (where `abc` or `-1` meant other things). */
export function parsePositiveInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < 1)
    throw new InvalidArgumentError('must be a positive integer (1, 2, ...)');
  return n;
}

export function parsePositiveNumber(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a positive number');
  return n;
}

export const limitOption = (what = 'newest first') =>
  new Option('--limit <n>', `how many to show, ${what} (a positive integer)`).argParser(parsePositiveInt).default(50);
