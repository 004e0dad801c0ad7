/**
 * A genuine sender's events that no mapping takes, against the real server process on docs/mappings.md's own GitHub
 * example (one mapping, for `pull_request`): fifty correctly signed deliveries of other event types from one client
 * address, signed by octokit's signer with GitHub's example payloads, are each answered 200 ignored: never a 401,
 * never counted towards `hooks.authFailureLimit` (20 by default), so the mapped delivery after them is still
 * accepted; each is recorded `unmatched`, counted by `hookgate_hooks_unmatched_total` and logged once, and no lockout
 * is recorded. A tampered delivery is still 401. Runs on SQLite, and on PostgreSQL with HOOKGATE_TEST_STORE=postgres.
 * `npm run build` first when running this file alone.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { WebhookDefinition } from '@octokit/webhooks-examples';
import { sign } from '@octokit/webhooks-methods';
import { parseExamples } from '../support/doc-examples.js';
import { parseMetrics, value } from '../support/prometheus.js';
import { type Hookgate, request, ROOT, runCli, startHookgate } from '../support/server.js';
import { waitFor } from '../support/wait.js';

const ADMIN = 'admin-token-for-unmatched-tests-0123';
const UNMAPPED = 50;

const definitions = createRequire(import.meta.url)('@octokit/webhooks-examples') as WebhookDefinition[];
const example = parseExamples(readFileSync(join(ROOT, 'docs/mappings.md'), 'utf8')).find((e) => e.name === 'github-pr');

/**
 * `count` GitHub deliveries of event types no mapping of the example names (every type but `pull_request` and the
 * `ping` handshake), `issues` and `push` first, the others after, each type's examples in turn.
 */
function unmappedEvents(count: number): Array<{ event: string; body: string }> {
  const first = ['issues', 'push'];
  const types = definitions
    .filter((d) => d.name !== 'pull_request' && d.name !== 'ping' && d.examples.length > 0)
    .sort(
      (a, b) =>
        Number(!first.includes(a.name)) - Number(!first.includes(b.name)) ||
        first.indexOf(a.name) - first.indexOf(b.name),
    );
  return Array.from({ length: count }, (_, i) => {
    const d = types[i % types.length]!;
    return { event: d.name, body: JSON.stringify(d.examples[Math.floor(i / types.length) % d.examples.length]) };
  });
}

describe('a signed sender whose event type has no mapping (real process)', { timeout: 180_000 }, () => {
  let hg: Hookgate;
  let adminUrl: string;
  const secret = () => example!.env.GITHUB_WEBHOOK_SECRET!;
  const deliver = async (event: string, body: string, tamper?: (body: string) => string) =>
    request(`${hg.url}/hooks/github`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': event,
        'x-github-delivery': randomUUID(),
        'x-hub-signature-256': await sign(secret(), body),
      },
      body: tamper ? tamper(body) : body,
    });
  const admin = async (path: string) => {
    const r = await fetch(`${adminUrl}${path}`, { headers: { authorization: `Bearer ${ADMIN}` } });
    assert.equal(r.status, 200, `${path}: ${r.status}`);
    return r;
  };

  before(async () => {
    assert.ok(example?.config, 'docs/mappings.md has the github-pr example and its config');
    hg = await startHookgate({
      config: { ...example.config, admin: { enabled: true, port: 0, token: ADMIN }, heartbeat: { every: 'off' } },
      env: example.env,
    });
    adminUrl = hg.logs.find((l) => l.msg === 'hookgate listening')!.adminUrl as string;
  });
  after(async () => {
    await hg?.cleanup();
  });

  it(`${UNMAPPED} unmapped events are answered 200 ignored, then the mapped one is accepted; a tampered one is 401`, async () => {
    const events = unmappedEvents(UNMAPPED);
    assert.deepEqual([events[0]!.event, events[1]!.event], ['issues', 'push']);
    const reqIds: string[] = [];
    for (const { event, body } of events) {
      const r = await deliver(event, body);
      assert.equal(r.status, 200, `${event}: ${r.text}`);
      assert.deepEqual(r.body, { ok: true, ignored: true }, event);
      reqIds.push(r.headers.get('x-request-id')!);
    }

    const pr = definitions.find((d) => d.name === 'pull_request')!.examples[0]!;
    const mapped = await deliver('pull_request', JSON.stringify(pr));
    assert.equal(mapped.status, 200, mapped.text);
    assert.equal(typeof mapped.body?.runId, 'string', 'the mapped delivery queued its run');

    const tampered = await deliver('issues', events[0]!.body, (b) => b.replace('"action":"', '"action":"x'));
    assert.equal(tampered.status, 401);
    assert.deepEqual(tampered.body, { ok: false, error: 'missing or invalid signature', code: 'unauthorized' });

    // Each ignored request logged one line at info, with its id, the path and the event; never the body.
    const lines = hg.logs.filter((l) => l.msg === 'hook ignored: signed request matches no mapping');
    assert.equal(lines.length, UNMAPPED);
    assert.deepEqual(
      lines.map((l) => l.reqId),
      reqIds,
    );
    assert.deepEqual(
      lines.map((l) => l.event),
      events.map((e) => e.event),
    );
    const fields = new Set([
      'level',
      'time',
      'svc',
      'pid',
      'hostname',
      'msg',
      'reqId',
      'path',
      'client',
      'scheme',
      'eventHeader',
      'event',
    ]);
    for (const l of lines) {
      assert.deepEqual([l.level, l.path, l.scheme, l.eventHeader], [30, 'github', 'github', 'x-github-event']);
      for (const k of Object.keys(l)) assert.ok(fields.has(k), `unexpected field ${k} in ${JSON.stringify(l)}`);
    }
  });

  it(`the received log holds ${UNMAPPED} unmatched records (API and CLI), the metric reads ${UNMAPPED}, and no lockout was recorded`, async () => {
    const unmatched = await waitFor(
      `${UNMAPPED} unmatched records`,
      async () => {
        const page = (await (await admin('/api/v1/received?path=github&limit=200')).json()) as {
          items: Array<Record<string, unknown>>;
        };
        const items = page.items.filter((r) => r.code === 'unmatched');
        return items.length === UNMAPPED ? items : undefined;
      },
      20_000,
    );
    for (const r of unmatched) {
      assert.deepEqual(
        [r.status, r.path, r.mappingId, r.runIds, r.eventIds, r.tokenId],
        [200, 'github', null, [], [], null],
      );
    }
    const cli = await runCli(['received', '--json', '--limit', '200', '--config', hg.configFile], { cwd: hg.dir });
    assert.equal(cli.code, 0, cli.stderr);
    assert.equal(
      (JSON.parse(cli.stdout) as Array<{ code: string | null }>).filter((r) => r.code === 'unmatched').length,
      UNMAPPED,
    );

    const metrics = parseMetrics(await (await admin('/metrics')).text());
    assert.equal(value(metrics, 'hookgate_hooks_unmatched_total', { path: 'github' }), UNMAPPED);
    assert.equal(value(metrics, 'hookgate_auth_failures_total'), 1, 'only the tampered delivery failed');
    assert.equal(value(metrics, 'hookgate_auth_lockouts_active'), 0);

    const audit = (await (await admin('/api/v1/audit?kind=lockout')).json()) as { items: unknown[] };
    assert.deepEqual(audit.items, []);
  });
});
