/**
 * Model refs: `<provider>/<model>` or an alias; providers that list their models; the `agents.defaults.models`
 * allowlist (array or record form, the record form carrying aliases); and where the config checks refs.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ModelCatalog } from '../../src/config/model-catalog.js';
import { assertIssue, parse } from './helpers.js';

const providers = {
  local: { api: 'openai-chat', baseUrl: 'http://127.0.0.1:11434/v1', models: ['llama3', 'qwen2'] },
  claude: { api: 'anthropic-messages', apiKey: 'k' },
  cli: { api: 'command', command: 'claude', args: ['-p'] },
};
const catalog = (defaults: Record<string, unknown> = {}) =>
  new ModelCatalog(parse({ models: { providers }, agents: { defaults: { model: 'echo/echo', ...defaults } } }));

describe('ModelCatalog.resolve', () => {
  it('echo is built in: any echo/<model> resolves without configuring it', () => {
    const c = new ModelCatalog(parse({}));
    assert.deepEqual(c.resolve('echo/echo'), {
      ok: true,
      model: { ref: 'echo/echo', providerId: 'echo', model: 'echo' },
    });
    assert.equal(c.resolve('echo/anything').ok, true);
  });

  it('<provider>/<model> of a configured provider resolves; the model part may contain "/"', () => {
    assert.deepEqual(catalog().resolve('claude/claude-sonnet-4'), {
      ok: true,
      model: { ref: 'claude/claude-sonnet-4', providerId: 'claude', model: 'claude-sonnet-4' },
    });
    assert.deepEqual(catalog().resolve('cli/org/model'), {
      ok: true,
      model: { ref: 'cli/org/model', providerId: 'cli', model: 'org/model' },
    });
    assert.equal(catalog().resolve('  claude/x  ').ok, true);
  });

  it('an unknown provider is refused, listing the configured ones', () => {
    assert.deepEqual(catalog().resolve('openai/gpt-4o'), {
      ok: false,
      reason: 'model "openai/gpt-4o": unknown provider "openai" (configured: echo, local, claude, cli)',
    });
  });

  it('a provider that lists its models accepts only those', () => {
    assert.equal(catalog().resolve('local/llama3').ok, true);
    assert.deepEqual(catalog().resolve('local/mistral'), {
      ok: false,
      reason: 'model "local/mistral": provider "local" lists only llama3, qwen2',
    });
  });

  it('a ref that is neither <provider>/<model> nor an alias is refused', () => {
    for (const ref of ['gpt4', '/model', 'provider/', '']) {
      const r = catalog().resolve(ref);
      assert.equal(r.ok, false, ref);
      assert.match((r as { reason: string }).reason, /is neither <provider>\/<model> nor a configured alias/);
    }
  });

  it('aliases come from the record form of agents.defaults.models', () => {
    const c = catalog({
      models: { 'local/llama3': { alias: 'fast' }, 'claude/claude-opus-4': { alias: 'smart' }, 'echo/echo': {} },
    });
    assert.deepEqual(c.resolve('fast'), {
      ok: true,
      model: { ref: 'local/llama3', providerId: 'local', model: 'llama3' },
    });
    assert.deepEqual(c.resolve('smart'), {
      ok: true,
      model: { ref: 'claude/claude-opus-4', providerId: 'claude', model: 'claude-opus-4' },
    });
    assert.equal(c.resolve('slow').ok, false);
  });

  it('the array form has no aliases', () => {
    const c = catalog({ models: ['local/llama3', 'echo/echo'] });
    assert.equal(c.resolve('fast').ok, false);
    assert.equal(c.resolve('llama3').ok, false);
  });
});

describe('the allowlist (agents.defaults.models)', () => {
  it('unset: every resolvable model is allowed', () => {
    const c = catalog();
    assert.equal(c.isAllowed('claude/anything'), true);
    assert.equal(c.resolveAllowed('claude/anything').ok, true);
  });

  it('array form: only the listed refs', () => {
    const c = catalog({ models: ['local/llama3', 'echo/echo'] });
    assert.equal(c.isAllowed('local/llama3'), true);
    assert.equal(c.isAllowed('local/qwen2'), false);
    assert.equal(c.resolveAllowed('local/llama3').ok, true);
    assert.deepEqual(c.resolveAllowed('local/qwen2'), {
      ok: false,
      reason: 'model "local/qwen2" is not in agents.defaults.models (allowed: local/llama3, echo/echo)',
    });
  });

  it('record form: the keys are the allowlist, an alias is allowed through its ref', () => {
    const c = catalog({ models: { 'local/llama3': { alias: 'fast' }, 'echo/echo': {} } });
    assert.equal(c.resolveAllowed('fast').ok, true);
    assert.equal(c.resolveAllowed('local/llama3').ok, true);
    assert.equal(c.resolveAllowed('claude/claude-opus-4').ok, false);
  });

  it('resolveAllowed reports an unresolvable ref as such, not as "not allowed"', () => {
    const r = catalog({ models: ['echo/echo'] }).resolveAllowed('nope/x');
    assert.equal(r.ok, false);
    assert.match((r as { reason: string }).reason, /unknown provider "nope"/);
  });
});

describe('model refs in the config', () => {
  it('agents.defaults.model must resolve', () => {
    assertIssue(
      { agents: { defaults: { model: 'nope/x' } } },
      'agents.defaults.model',
      'model "nope/x": unknown provider "nope" (configured: echo)',
    );
    assertIssue(
      { agents: { defaults: { model: 'justname' } } },
      'agents.defaults.model',
      /is neither <provider>\/<model> nor a configured alias/,
    );
  });

  it('a model of a provider that lists models must be one of them', () => {
    assertIssue(
      { models: { providers: { local: providers.local } }, agents: { defaults: { model: 'local/mistral' } } },
      'agents.defaults.model',
      'model "local/mistral": provider "local" lists only llama3, qwen2',
    );
  });

  it('agents.defaults.model may be an alias of the record form', () => {
    const c = parse({
      models: { providers: { local: providers.local } },
      agents: { defaults: { model: 'fast', models: { 'local/llama3': { alias: 'fast' } } } },
    });
    assert.equal(c.agents.defaults.model, 'fast');
  });

  it('agents.defaults.model (and each agent model) must be in the allowlist', () => {
    assertIssue(
      { agents: { defaults: { models: ['echo/other'] } } },
      'agents.defaults.model',
      'model "echo/echo" is not in agents.defaults.models (allowed: echo/other)',
    );
    assertIssue(
      { agents: { defaults: { models: ['echo/echo'] }, list: [{ id: 'main', model: 'echo/big' }] } },
      'agents.list[0].model',
      /is not in agents\.defaults\.models/,
    );
  });

  it('every allowlist entry must resolve', () => {
    assertIssue(
      { agents: { defaults: { models: ['echo/echo', 'local/x'] } } },
      'agents.defaults.models',
      /unknown provider "local"/,
    );
    assertIssue(
      { agents: { defaults: { models: { 'echo/echo': {}, 'nope/y': { alias: 'n' } } } } },
      'agents.defaults.models',
      /unknown provider "nope"/,
    );
  });

  it('an allowlist record entry accepts only alias', () => {
    assertIssue(
      { agents: { defaults: { models: { 'echo/echo': { alias: 'e', temperature: 1 } } } } },
      'agents.defaults.models.echo/echo',
    );
  });

  it('an agent model must resolve, by index', () => {
    assertIssue(
      { agents: { list: [{ id: 'main' }, { id: 'ops', model: 'nope/x' }] } },
      'agents.list[1].model',
      /unknown provider/,
    );
  });

  it('a mapping model must resolve and be allowed; a templated one is checked per request', () => {
    assertIssue(
      { hooks: { mappings: [{ messageTemplate: 'm' }, { messageTemplate: 'm', model: 'nope/x' }] } },
      'hooks.mappings[1].model',
      /unknown provider "nope"/,
    );
    assertIssue(
      {
        agents: { defaults: { models: ['echo/echo'] } },
        hooks: { mappings: [{ messageTemplate: 'm', model: 'echo/big' }] },
      },
      'hooks.mappings[0].model',
      /is not in agents\.defaults\.models/,
    );
    parse({ hooks: { mappings: [{ messageTemplate: 'm', model: '{{payload.model}}' }] } });
  });

  it('hooks.gmail.model must resolve', () => {
    assertIssue({ hooks: { gmail: { model: 'nope/x' } } }, 'hooks.gmail.model', /unknown provider/);
  });

  it('the id "echo" is reserved for the built-in echo provider', () => {
    parse({ models: { providers: { echo: { api: 'echo', models: ['echo'] } } } });
    assertIssue(
      { models: { providers: { echo: { api: 'command', command: 'x' } } } },
      'models.providers.echo.api',
      'the id "echo" is the built-in echo provider; pick another id for an command provider',
    );
  });

  it('providers: a known api, and the api-specific keys', () => {
    assertIssue({ models: { providers: { x: { api: 'grpc' } } } }, 'models.providers.x.api');
    assertIssue({ models: { providers: { x: { api: 'command' } } } }, 'models.providers.x.command');
    assertIssue(
      { models: { providers: { x: { api: 'openai-chat', baseUrl: 'ftp://h' } } } },
      'models.providers.x.baseUrl',
      'must be an http(s) URL',
    );
    assertIssue({ models: { providers: { 'bad id': { api: 'echo' } } } }, 'models.providers.bad id');
  });

  it('provider defaults', () => {
    const c = parse({
      models: {
        providers: { o: { api: 'openai-chat' }, a: { api: 'anthropic-messages' }, c: { api: 'command', command: 'x' } },
      },
    });
    assert.deepEqual(c.models.providers.o, {
      api: 'openai-chat',
      baseUrl: 'https://api.openai.com/v1',
      maxAttempts: 3,
    });
    assert.deepEqual(c.models.providers.a, {
      api: 'anthropic-messages',
      baseUrl: 'https://api.anthropic.com',
      anthropicVersion: '2023-06-01',
      maxTokens: 4096,
      maxAttempts: 3,
    });
    assert.deepEqual(c.models.providers.c, { api: 'command', command: 'x', args: [], maxAttempts: 3 });
  });
});
