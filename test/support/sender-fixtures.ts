/** The senders' documented sample payloads (test/fixtures/senders/<sender>/, each folder's README names the doc page). */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fromRoot } from './paths.js';

const DIR = fromRoot('test/fixtures/senders');

// Their shapes differ per sender and event; the tests read them as plain JSON.
export type Fixture = Record<string, any>;

export function fixture(sender: string, name: string): Fixture {
  return JSON.parse(readFileSync(join(DIR, sender, `${name}.json`), 'utf8')) as Fixture;
}
