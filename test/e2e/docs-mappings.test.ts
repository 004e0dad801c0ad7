/**
 * Runs the worked examples of docs/mappings.md and docs/senders.md against the real server, exactly as written there.
 *
 * The doc marks each fenced block with an HTML comment `<!-- example <name>: <kind> -->` right above it:
 *   env              ```sh      `export NAME=value` lines: the server's environment (and the secrets to sign with)
 *   config           ```json5   the config (a free port, a temp SQLite file and log settings are added)
 *   file <path>      any        written to <path> inside the config directory before the start
 *   request          ```http    a request: request line, headers, blank line, body (sent byte for byte)
 *   response         ```http    the answer to the request before it: status line, blank line, JSON body
 *   run              ```json    fields of the run whose id the last answer returned (`runId`)
 *   runs             ```json    fields of each run of the last answer's `runIds`, in order
 *   event            ```text    the text of the wake event the last answer returned (`eventId`)
 * Placeholders: `<hook token>`, `<timestamp>`, `<signature>` in requests (GitLab's and a bearer's: the secret itself); `"<uuid>"` and `"<same as above>"` in answers.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { SENDER_PRESETS, type SenderName } from '../../src/config/schema/hooks.js';
import { request, ROOT, startHookgate } from '../support/server.js';
import { tempDir } from '../support/temp-dir.js';
import { openStoreAt } from '../support/runtime-kit.js';
import { parseExamples } from '../support/doc-examples.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** `${VAR}` in a config string, as the config loader replaces it. */
const interpolate = (s: string, env: Record<string, string>) =>
  s.replace(/\$\{([A-Z_][A-Z0-9_]*)\}/g, (_, n: string) => env[n] ?? '');

interface SignatureSpec {
  scheme: string;
  /** A string (with `${VAR}` interpolation) or a secret reference `{ env: NAME }`. */
  secret?: string | { env: string };
  secrets?: string[];
  header?: string;
  encoding?: string;
  prefix?: string;
}

/** The signature config of the mapping (or sender preset: its sender's scheme) that owns `path` in the example config. */
function signatureFor(config: Record<string, unknown>, path: string): SignatureSpec | undefined {
  const hooks = (config.hooks ?? {}) as { mappings?: Array<Record<string, unknown>>; presets?: unknown[] };
  const m = (hooks.mappings ?? []).find((x) => {
    const p = (x.match as { path?: string } | undefined)?.path;
    return p === undefined || p.replace(/^\/+|\/+$/g, '') === path;
  });
  if (m) return m.signature as SignatureSpec | undefined;
  for (const p of hooks.presets ?? []) {
    if (typeof p !== 'object' || p === null) continue;
    const {
      use,
      path: own,
      ...secret
    } = p as { use: SenderName; path?: string } & Pick<SignatureSpec, 'secret' | 'secrets'>;
    if ((own ?? use).replace(/^\/+|\/+$/g, '') !== path) continue;
    return { scheme: SENDER_PRESETS[use], secret: secret.secret, secrets: secret.secrets };
  }
  return undefined;
}

/** The value that replaces `<signature>`, computed the way each provider does. */
function sign(
  spec: SignatureSpec,
  env: Record<string, string>,
  body: string,
  headers: Record<string, string>,
  ts: string,
): string {
  const configured = spec.secret ?? spec.secrets![0]!;
  const secret = typeof configured === 'string' ? interpolate(configured, env) : (env[configured.env] ?? '');
  const h = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data);
  switch (spec.scheme) {
    case 'github':
      return h(secret, body).digest('hex');
    case 'stripe':
      return h(secret, `${ts}.${body}`).digest('hex');
    case 'slack':
      return h(secret, `v0:${ts}:${body}`).digest('hex');
    case 'standard-webhooks': {
      const key = secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : Buffer.from(secret, 'base64');
      return h(key, `${headers['webhook-id']}.${ts}.${body}`).digest('base64');
    }
    case 'hmac-sha256':
      return h(secret, body).digest(spec.encoding === 'base64' ? 'base64' : 'hex');
    case 'sentry':
      return h(secret, body).digest('hex');
    case 'shopify':
      return h(secret, body).digest('base64');
    case 'gitlab':
    case 'bearer':
      // Sent as it is: the secret is the credential.
      return secret;
    default:
      throw new Error(`unknown scheme ${spec.scheme}`);
  }
}

function parseRequest(text: string): { method: string; path: string; headers: Record<string, string>; body: string } {
  const blank = text.indexOf('\n\n');
  const head = (blank < 0 ? text : text.slice(0, blank)).split('\n');
  const body = blank < 0 ? '' : text.slice(blank + 2);
  const [method, path] = head[0]!.split(' ') as [string, string];
  const headers: Record<string, string> = {};
  for (const line of head.slice(1)) {
    const i = line.indexOf(':');
    headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  return { method, path, headers, body };
}

function parseResponse(text: string): { status: number; body: unknown } {
  const blank = text.indexOf('\n\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
  const bodyText = blank < 0 ? '' : text.slice(blank + 2).trim();
  return { status, body: bodyText ? (JSON.parse(bodyText) as unknown) : null };
}

/** Deep equality where `"<uuid>"` matches any id and `"<same as above>"` the same key of the previous answer. */
function matches(
  expected: unknown,
  actual: unknown,
  previous: Record<string, unknown> | undefined,
  key: string,
  at: string,
): void {
  if (expected === '<uuid>')
    return assert.match(String(actual), UUID, `${at}: expected an id, got ${JSON.stringify(actual)}`);
  if (expected === '<same as above>')
    return assert.equal(actual, previous?.[key], `${at}: expected the same ${key} as the previous answer`);
  if (Array.isArray(expected)) {
    assert.ok(Array.isArray(actual), `${at}: expected an array`);
    assert.equal(actual.length, expected.length, `${at}: length`);
    for (const [i, e] of expected.entries()) matches(e, actual[i], previous, key, `${at}[${i}]`);
    return;
  }
  if (expected !== null && typeof expected === 'object') {
    assert.ok(
      actual !== null && typeof actual === 'object',
      `${at}: expected an object, got ${JSON.stringify(actual)}`,
    );
    assert.deepEqual(Object.keys(actual).sort(), Object.keys(expected).sort(), `${at}: keys`);
    for (const [k, v] of Object.entries(expected))
      matches(v, (actual as Record<string, unknown>)[k], previous, k, `${at}.${k}`);
    return;
  }
  assert.deepEqual(actual, expected, at);
}

/** Each doc with worked examples, and the examples it must have. */
const DOCS: ReadonlyArray<[string, readonly string[]]> = [
  ['docs/mappings.md', ['github-pr', 'slack', 'stripe-payment', 'gmail', 'alert-filter', 'home-assistant']],
  [
    'docs/senders.md',
    ['github', 'stripe', 'slack', 'standard-webhooks', 'gitlab', 'alertmanager', 'sentry', 'shopify'],
  ],
];

for (const [doc, required] of DOCS) {
  const markdown = readFileSync(join(ROOT, doc), 'utf8');
  const examples = parseExamples(markdown);

  describe(`${doc} worked examples`, () => {
    it('has the examples it must have, each with a config, requests and answers', () => {
      // Every marker is followed by a block the parser read (a typo in a marker must not silently drop a check).
      const markers = markdown.match(/<!-- example /g)?.length ?? 0;
      const read = examples.reduce(
        (n, e) => n + (Object.keys(e.env).length ? 1 : 0) + (e.config ? 1 : 0) + e.files.length + e.steps.length,
        0,
      );
      assert.equal(read, markers);
      const names = examples.map((e) => e.name);
      for (const n of required) assert.ok(names.includes(n), `missing example ${n}`);
      for (const e of examples) {
        assert.ok(e.config, `${e.name}: no config`);
        const reqs = e.steps.filter((s) => s.kind === 'request').length;
        assert.ok(reqs > 0, `${e.name}: no request`);
        assert.equal(e.steps.filter((s) => s.kind === 'response').length, reqs, `${e.name}: one response per request`);
      }
    });

    for (const ex of examples) {
      it(ex.name, async () => {
        const dir = tempDir(`hookgate-docs-${ex.name}-`);
        for (const f of ex.files) {
          mkdirSync(dirname(join(dir, f.path)), { recursive: true });
          writeFileSync(join(dir, f.path), f.text);
        }
        const hg = await startHookgate({ dir, config: ex.config!, env: ex.env });
        try {
          let sent: ReturnType<typeof parseRequest> | undefined;
          let last: Record<string, unknown> | undefined;
          let previous: Record<string, unknown> | undefined;
          for (const step of ex.steps) {
            if (step.kind === 'request') {
              const ts = String(Math.floor(Date.now() / 1000));
              const req = parseRequest(step.text);
              const headers: Record<string, string> = { ...req.headers };
              const spec = signatureFor(ex.config!, req.path.replace(/^\/hooks\/?/, ''));
              for (const [k, v] of Object.entries(headers)) {
                let value = v.replaceAll('<hook token>', ex.env.HOOKGATE_TOKEN ?? '').replaceAll('<timestamp>', ts);
                if (value.includes('<signature>')) {
                  assert.ok(spec, `${ex.name}: <signature> on a path without a signed mapping`);
                  value = value.replaceAll('<signature>', sign(spec, ex.env, req.body, headers, ts));
                }
                headers[k] = value;
              }
              sent = { ...req, headers };
            } else if (step.kind === 'response') {
              assert.ok(sent, `${ex.name}: a response without a request`);
              const r = await request(`${hg.url}${sent.path}`, {
                method: sent.method,
                headers: sent.headers,
                body: sent.body,
              });
              const want = parseResponse(step.text);
              assert.equal(r.status, want.status, `${ex.name} ${sent.path}: ${r.text}`);
              if (want.body === null) assert.equal(r.text, '');
              else matches(want.body, r.body, previous, '', `${ex.name} answer`);
              previous = r.body ?? undefined;
              last = r.body ?? undefined;
              sent = undefined;
            } else {
              const store = openStoreAt(dir);
              try {
                if (step.kind === 'event') {
                  const main = await store.getSession('main');
                  const events = [...(main?.pending ?? []), ...(main?.recentEvents ?? [])];
                  const ev = events.find((e) => e.id === last?.eventId);
                  assert.equal(ev?.text, step.text, `${ex.name}: the wake event`);
                } else {
                  const ids =
                    step.kind === 'run' ? [String(last?.runId)] : ((last?.runIds as string[] | undefined) ?? []);
                  const want = (step.kind === 'run' ? [JSON.parse(step.text)] : JSON.parse(step.text)) as Array<
                    Record<string, unknown>
                  >;
                  assert.equal(ids.length, want.length, `${ex.name}: number of runs`);
                  for (let i = 0; i < ids.length; i++) {
                    const run = (await store.getRun(ids[i]!)) as unknown as Record<string, unknown> | undefined;
                    assert.ok(run, `${ex.name}: run ${ids[i]} stored`);
                    for (const [k, v] of Object.entries(want[i]!))
                      assert.deepEqual(run[k], v, `${ex.name}: run[${i}].${k}`);
                  }
                }
              } finally {
                await store.close();
              }
            }
          }
        } finally {
          await hg.cleanup();
        }
      });
    }
  });
}
