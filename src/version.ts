/**
 * hookgate's version, read once from package.json (one directory above both src/ and dist/): the CLI's `--version`
 * and the node registry say the same thing, and a release bumps one place.
 */
import { readFileSync } from 'node:fs';

function readVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    // A packaging that left package.json out: the version is only informative, never a reason not to start.
    return 'unknown';
  }
}

export const VERSION = readVersion();
