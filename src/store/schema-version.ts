/**
 * Who may change a store's schema, and what every other command says instead (docs/operations.md, "Upgrading").
 * Only `serve` and `hookgate store migrate` migrate ("migrate"); every other command needs the schema this hookgate
 * knows ("current"), so an older build never runs on a store that a reader silently moved forward. A newer schema is
 * refused by all, serve included.
 */
import { StoreSchemaError } from '../errors.js';

export type SchemaPolicy = 'migrate' | 'current';

/** What to do about an older schema: the only two commands that migrate. */
export const MIGRATE_HINT = 'run `hookgate store migrate` or start the service';

/**
 * Throws unless a store at schema `found` may be used by a command with `policy` (this hookgate knows `known`).
 * `where` names the store for people (a path, or a URL without its password).
 */
export function assertSchemaUsable(found: number, known: number, where: string, policy: SchemaPolicy): void {
  if (found > known) {
    throw new StoreSchemaError(
      'store_schema_newer',
      `the store at ${where} was written by a newer hookgate (schema ${found}); this one knows up to ${known}: upgrade hookgate`,
      found,
      known,
    );
  }
  if (found < known && policy === 'current') {
    throw new StoreSchemaError(
      'store_schema_outdated',
      `the store at ${where} is at schema ${found}; this hookgate needs ${known}: ${MIGRATE_HINT}`,
      found,
      known,
    );
  }
}
