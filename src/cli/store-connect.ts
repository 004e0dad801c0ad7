/**
 * The store a config names, opened to see that it can be used, creating and changing nothing: `config check
 * --connect` and `hookgate doctor`. PostgreSQL: connect, the server's version and the schema's (none yet, current,
 * older → to migrate, newer → refused). SQLite: the doctor's file checks (there is nothing to connect to; a
 * missing store is what `serve` creates). Never a password in what it says.
 */
import { CHECK_TIMEOUT_MS } from '../check.js';
import { scrubUrlSecrets } from '../config/database-url.js';
import type { StorageConfig } from '../config/load.js';
import { MIGRATE_HINT } from '../store/schema-version.js';
import { firstLine, safeUrl } from '../text-safe.js';
import { type Finding, finding } from './doctor-format.js';
import { checkStore } from './doctor-store.js';

export async function checkStoreConnection(storage: StorageConfig, dir: string, fromFile: boolean): Promise<Finding[]> {
  if (storage.driver === 'sqlite') return checkStore(storage, dir, fromFile);
  return [await checkPostgresStore(storage.url)];
}

export async function checkPostgresStore(url: string): Promise<Finding> {
  const shown = safeUrl(url);
  // Loaded here only: the PostgreSQL client is not loaded by every CLI command.
  const { checkPostgres } = await import('../store/postgres.js');
  let found: Awaited<ReturnType<typeof checkPostgres>>;
  try {
    found = await checkPostgres(url, { connectionTimeoutMs: CHECK_TIMEOUT_MS, statementTimeoutMs: CHECK_TIMEOUT_MS });
  } catch (err) {
    return finding(
      'fail',
      'store',
      `${shown}: ${firstLine(scrubUrlSecrets(err instanceof Error ? err.message : String(err), url))}`,
      connectFix(err),
    );
  }
  const server = `${shown}: PostgreSQL ${found.serverVersion}`;
  const { schemaVersion: have, knownVersion: known } = found;
  if (have === null)
    return finding('ok', 'store', `${server}; schema: none yet (\`hookgate serve\` creates it at start)`);
  if (have === known) return finding('ok', 'store', `${server}; schema: current (version ${have})`);
  if (have < known)
    return finding(
      'warn',
      'store',
      `${server}; schema: older (version ${have}; this hookgate needs ${known}): the other commands refuse it until it is migrated`,
      MIGRATE_HINT,
    );
  return finding(
    'fail',
    'store',
    `${server}; schema: version ${have}, newer than this hookgate knows (${known})`,
    'upgrade hookgate on this node: a newer one migrated the database',
  );
}

/** What to change, from the driver's error code (SQLSTATE or socket code), never from its message. */
function connectFix(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown } }).cause;
  const code = String(
    (err as { code?: unknown }).code === 'store_unavailable'
      ? (cause?.code ?? '')
      : ((err as { code?: unknown }).code ?? ''),
  );
  if (code === 'ECONNREFUSED' || code === 'ETIMEDOUT' || code === 'EHOSTUNREACH' || code === '')
    return 'check that PostgreSQL runs and that the host and port of storage.url reach it';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'check the host name of storage.url';
  if (code === '28P01' || code === '28000') return 'check the user and password of storage.url (and pg_hba.conf)';
  if (code === '3D000') return 'create the database (createdb), or fix its name in storage.url';
  return 'check storage.url and the server';
}
