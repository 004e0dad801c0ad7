/**
 * The alertmanager preset (bearer token) over a version "4" notification (test/fixtures/senders/alertmanager): one
 * message per notification summarising its group, firing and resolved worded apart, the alerts listed up to a cap,
 * and one conversation per group (`groupKey`).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_ALERTS } from '../../../../src/hooks/mappings/presets/alertmanager.js';
import { fixture } from '../../../support/sender-fixtures.js';
import { actionOf, deliver, kit, runOf } from './kit.js';

const SECRET = 'alertmanager-bearer-secret';
const k = kit({ presets: [{ use: 'alertmanager', secret: SECRET }] });
const KEY = 'hook:alertmanager:{}/{severity="critical"}:{alertname="ProbeFailure"}';

describe('the alertmanager preset', () => {
  it('firing: the group, its severity, each alert with its summary, description and source, the links; no delivery id', async () => {
    const { result, action } = await actionOf(k, 'alertmanager', fixture('alertmanager', 'firing'));
    assert.equal(result.deliveryId, undefined, 'Alertmanager sends none');
    const r = (action as Extract<typeof action, { kind: 'agent' }>).run;
    assert.equal(
      r.message,
      [
        'Alertmanager: FIRING ProbeFailure (severity critical): 2 alerts firing (receiver sms)',
        '- ProbeFailure [critical] on https://server.example.org: BlackBox Probe Failure: https://server.example.org',
        '  Instance https://server.example.org has been down for over 5m. Job: http_checks',
        '  since 2023-02-06T13:08:45.828Z',
        '  http://prometheus.example.org:9090/graph?g0.expr=probe_success+%3D%3D+0&g0.tab=1',
        '- ProbeFailure [critical] on https://api.example.org: BlackBox Probe Failure: https://api.example.org',
        '  Instance https://api.example.org has been down for over 5m. Job: http_checks',
        '  since 2023-02-06T13:09:15.828Z',
        '  http://prometheus.example.org:9090/graph?g0.expr=probe_success+%3D%3D+0&g0.tab=1',
        'Alertmanager: http://prometheus.example.org:9093',
        'Group {}/{severity="critical"}:{alertname="ProbeFailure"}',
      ].join('\n'),
    );
    assert.equal(r.sessionKey, KEY);
    assert.equal(r.name, 'Alertmanager');
  });

  it('resolved: worded apart, with when it started and ended, in the same conversation', async () => {
    const r = await runOf(k, 'alertmanager', fixture('alertmanager', 'resolved'));
    const lines = r.message.split('\n');
    assert.equal(
      lines[0],
      'Alertmanager: RESOLVED ProbeFailure (severity critical): 1 alert no longer firing (receiver sms)',
    );
    assert.ok(lines.includes('  from 2023-02-06T13:08:45.828Z to 2023-02-06T13:21:45.828Z'), r.message);
    assert.equal(r.sessionKey, KEY);
  });

  it(`lists ${MAX_ALERTS} alerts and counts the rest (and those Alertmanager truncated); annotations are capped`, async () => {
    const n = fixture('alertmanager', 'firing');
    const one = n.alerts[0];
    n.alerts = Array.from({ length: 14 }, (_, i) => ({
      ...one,
      labels: { ...one.labels, instance: `host-${i}` },
      annotations: { summary: 'x'.repeat(1000) },
    }));
    n.truncatedAlerts = 3;
    const r = await runOf(k, 'alertmanager', n);
    assert.equal(r.message.split('\n').filter((l) => l.startsWith('- ')).length, MAX_ALERTS);
    assert.ok(r.message.includes('… and 7 alerts more'), r.message);
    assert.ok(
      r.message.split('\n').every((l) => l.length < 400),
      'a summary is capped',
    );
  });

  it('a wrong bearer token is refused', async () => {
    assert.equal(
      (await deliver(k, 'alertmanager', fixture('alertmanager', 'firing'), { secret: 'another-token' })).kind,
      'unauthorized',
    );
  });
});
