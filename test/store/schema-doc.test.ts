/**
 * docs/schema.md is what scripts/schema-doc.mjs prints (the live schema of a freshly migrated store of each driver):
 * a migration that changes a table fails here until the page is generated again.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { ROOT } from '../support/paths.js';
import { PG_ADMIN_URL, skipWithoutPostgres } from '../support/pg-database.js';

const skip = await skipWithoutPostgres();

describe('docs/schema.md', { skip }, () => {
  it('is what scripts/schema-doc.mjs prints', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/schema-doc.mjs'], {
      cwd: ROOT,
      env: { ...process.env, HOOKGATE_TEST_PG_URL: PG_ADMIN_URL },
    });
    const page = readFileSync(join(ROOT, 'docs/schema.md'), 'utf8');
    assert.ok(
      stdout === page,
      'docs/schema.md is out of date: run `node --import tsx scripts/schema-doc.mjs > docs/schema.md`',
    );
  });
});
