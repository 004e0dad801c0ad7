/**
 * The setup the provider tests (test/providers/*.test.ts) share: a model request with defaults, the ProviderError a
 * call rejects with, and one model stand-in per suite.
 *
 *   const request = requestFor('llama3.2');          // request({ thinking: 'high' })
 *   const err = await rejection(provider.complete(request()));
 *   describe('...', () => {
 *     let ai: OpenAIStandin;
 *     withStandin(async () => (ai = await startOpenAIStandin({ apiKey: KEY })));
 *   });
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach } from 'node:test';
import { ProviderError, type ModelRequest } from '../../src/providers/types.js';

/** Requests for `model`: one user message 'hello there' and a fresh signal, unless `over` says otherwise. */
export function requestFor(model: string): (over?: Partial<ModelRequest>) => ModelRequest {
  return (over = {}) => ({
    model,
    messages: [{ role: 'user', content: 'hello there' }],
    signal: new AbortController().signal,
    ...over,
  });
}

/** The ProviderError `p` rejects with; fails the test when it resolves or rejects with anything else. */
export async function rejection(p: Promise<unknown>): Promise<ProviderError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ProviderError, `expected a ProviderError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a rejection');
}

/** What withStandin needs of a stand-in (anthropic-standin.ts and openai-standin.ts have it). */
interface SuiteStandin {
  requests: unknown[];
  calls: unknown[];
  setMode(mode: 'ok'): void;
  close(): Promise<void>;
}

/**
 * One stand-in for the enclosing describe: `start` runs before its tests (assign the stand-in there), close() after
 * them, and before each test the recorded requests and calls are cleared and the mode is back to 'ok'.
 */
export function withStandin(start: () => Promise<SuiteStandin>): void {
  let standin: SuiteStandin | undefined;
  before(async () => {
    standin = await start();
  });
  after(() => standin?.close());
  beforeEach(() => {
    standin!.requests.length = 0;
    standin!.calls.length = 0;
    standin!.setMode('ok');
  });
}
