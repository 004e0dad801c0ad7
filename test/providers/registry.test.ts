import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { modelsSchema } from '../../src/config/schema/models.js';
import { closeProviders, createProviders } from '../../src/providers/registry.js';
import type { ModelProvider } from '../../src/providers/types.js';

const signal = () => new AbortController().signal;

describe('createProviders', () => {
  it('always includes the built-in echo provider', async () => {
    const map = createProviders({});
    assert.deepEqual([...map.keys()], ['echo']);
    const echo = map.get('echo')!;
    assert.equal(echo.api, 'echo');
    assert.equal(
      (await echo.complete({ model: 'echo', messages: [{ role: 'user', content: 'hi' }], signal: signal() })).text,
      'echo: hi',
    );
  });

  it('instantiates each configured provider by its api, under its id', () => {
    const { providers } = modelsSchema.parse({
      providers: {
        local: { api: 'openai-chat', baseUrl: 'http://127.0.0.1:11434/v1' },
        claude: { api: 'anthropic-messages', apiKey: 'k' },
        cli: { api: 'command', command: 'claude', args: ['-p'] },
        demo: { api: 'echo' },
      },
    });
    const map = createProviders(providers);
    const summary = [...map.values()].map((p) => `${p.id}:${p.api}`).sort();
    assert.deepEqual(summary, [
      'claude:anthropic-messages',
      'cli:command',
      'demo:echo',
      'echo:echo',
      'local:openai-chat',
    ]);
  });

  it('closeProviders closes every provider even when one close fails', async () => {
    const closed: string[] = [];
    const fake = (id: string, fail = false): ModelProvider => ({
      id,
      api: 'echo',
      complete: async () => ({ text: '' }),
      close: async () => {
        closed.push(id);
        if (fail) throw new Error('boom');
      },
    });
    const map = new Map([
      ['a', fake('a', true)],
      ['b', fake('b')],
      ['c', { id: 'c', api: 'echo', complete: async () => ({ text: '' }) } satisfies ModelProvider],
    ]);
    await closeProviders(map);
    assert.deepEqual(closed.sort(), ['a', 'b']);
  });
});

describe('models schema', () => {
  it('fills defaults and stays strict', () => {
    const { providers } = modelsSchema.parse({
      providers: { local: { api: 'openai-chat' }, claude: { api: 'anthropic-messages' } },
    });
    assert.deepEqual(providers['local'], { api: 'openai-chat', baseUrl: 'https://api.openai.com/v1', maxAttempts: 3 });
    assert.deepEqual(providers['claude'], {
      api: 'anthropic-messages',
      baseUrl: 'https://api.anthropic.com',
      anthropicVersion: '2023-06-01',
      maxTokens: 4096,
      maxAttempts: 3,
    });
    assert.equal(modelsSchema.safeParse({ providers: { x: { api: 'openai-chat', apiKy: 'typo' } } }).success, false);
    assert.equal(
      modelsSchema.safeParse({ providers: { x: { api: 'command' } } }).success,
      false,
      'command is required',
    );
  });

  it('the id "echo" may only be an echo provider', () => {
    const bad = modelsSchema.safeParse({ providers: { echo: { api: 'openai-chat' } } });
    assert.equal(bad.success, false);
    assert.deepEqual(bad.error?.issues[0]?.path, ['providers', 'echo', 'api']);
    assert.equal(
      modelsSchema.safeParse({ providers: { echo: { api: 'echo', models: ['echo', 'ack'] } } }).success,
      true,
    );
  });
});
