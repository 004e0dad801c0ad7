/**
 * Prometheus Alertmanager's webhook receiver (docs/senders.md, "Alertmanager"): `Authorization: Bearer <secret>` with a
 * secret the user makes (`http_config.authorization.credentials`); nothing is signed and no delivery id is sent. One
 * notification (payload version "4") is one group of alerts: one message summarising it, firing and resolved worded
 * apart, each alert's summary and description (the first `MAX_ALERTS`), and the links. A group (`groupKey`) is one
 * conversation: its resolution is answered with its firing in view.
 */
import { truncateWithEllipsis } from '../../../text-safe.js';
import { lookupPath, type TemplateContext } from '../templates.js';
import type { SenderPreset } from './sender.js';

/** Alerts listed one by one; the others are counted. */
export const MAX_ALERTS = 10;
/** Longest annotation (summary, description) quoted per alert. */
const MAX_ANNOTATION = 300;

/** A non-blank string (or number) at `path`, else undefined. */
function text(root: unknown, path: string): string | undefined {
  const v = lookupPath(root, path);
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
}

/** `- <alertname> [<severity>] on <instance>: <summary>` and its description, one alert. */
function alertLines(alert: unknown, resolved: boolean): string[] {
  const name = text(alert, 'labels.alertname') ?? 'alert';
  const severity = text(alert, 'labels.severity');
  const where = text(alert, 'labels.instance') ?? text(alert, 'labels.job');
  const summary = text(alert, 'annotations.summary');
  const description = text(alert, 'annotations.description');
  const head = `- ${name}${severity ? ` [${severity}]` : ''}${where ? ` on ${where}` : ''}`;
  const lines = [summary ? `${head}: ${truncateWithEllipsis(summary, MAX_ANNOTATION)}` : head];
  if (description && description !== summary) lines.push(`  ${truncateWithEllipsis(description, MAX_ANNOTATION)}`);
  const since = text(alert, 'startsAt');
  const until = text(alert, 'endsAt');
  if (resolved && since && until) lines.push(`  from ${since} to ${until}`);
  else if (since) lines.push(`  since ${since}`);
  const runbook = text(alert, 'annotations.runbook_url');
  if (runbook) lines.push(`  runbook ${runbook}`);
  const source = text(alert, 'generatorURL');
  if (source) lines.push(`  ${source}`);
  return lines;
}

/** The message of one notification: what is firing (or resolved), where, each alert, and the links. */
function notification(resolved: boolean) {
  return (ctx: TemplateContext): string => {
    const n = ctx.payload;
    const all = lookupPath(n, 'alerts');
    const alerts = Array.isArray(all) ? all : [];
    // A notification lists the group's firing and resolved alerts together: the status asked for comes first.
    const wanted = resolved ? 'resolved' : 'firing';
    const ordered = [
      ...alerts.filter((x) => text(x, 'status') === wanted),
      ...alerts.filter((x) => text(x, 'status') !== wanted),
    ];
    const firing = alerts.filter((x) => text(x, 'status') === 'firing').length;
    const group = text(n, 'commonLabels.alertname') ?? text(n, 'groupLabels.alertname') ?? 'several alert rules';
    const severity = text(n, 'commonLabels.severity');
    const receiver = text(n, 'receiver');
    const count = (k: number) => `${k} alert${k === 1 ? '' : 's'}`;
    const head = resolved
      ? `Alertmanager: RESOLVED ${group}${severity ? ` (severity ${severity})` : ''}: ${count(alerts.length - firing)} no longer firing` +
        (firing > 0 ? `, ${count(firing)} still firing` : '')
      : `Alertmanager: FIRING ${group}${severity ? ` (severity ${severity})` : ''}: ${count(firing)} firing` +
        (alerts.length > firing ? `, ${count(alerts.length - firing)} resolved` : '');
    const lines = [receiver ? `${head} (receiver ${receiver})` : head];
    for (const alert of ordered.slice(0, MAX_ALERTS))
      lines.push(...alertLines(alert, text(alert, 'status') === 'resolved'));
    const truncated = Number(lookupPath(n, 'truncatedAlerts'));
    const more =
      ordered.length -
      Math.min(ordered.length, MAX_ALERTS) +
      (Number.isSafeInteger(truncated) && truncated > 0 ? truncated : 0);
    if (more > 0) lines.push(`… and ${count(more)} more`);
    const external = text(n, 'externalURL');
    if (external) lines.push(`Alertmanager: ${external}`);
    const key = text(n, 'groupKey');
    if (key) lines.push(`Group ${key}`);
    return lines.join('\n');
  };
}

export const alertmanager: SenderPreset = {
  name: 'alertmanager',
  title: 'Prometheus Alertmanager',
  runName: 'Alertmanager',
  event: { field: 'status' },
  messages: { firing: notification(false), resolved: notification(true) },
  defaultMessage: [
    'Alertmanager notification, status {{status}}, receiver {{receiver}}',
    'Alerts: {{alerts}}',
    '{{externalURL}}',
  ].join('\n'),
  sessionKeys: { '*': ['{{groupKey}}'] },
  setup: {
    secret: 'generate',
    steps: [
      'In alertmanager.yml, a receiver: webhook_configs: [{ url: <url>, http_config: { authorization: { credentials: <the secret> } } }]',
      '(or credentials_file: a file holding the secret); send_resolved stays true for the resolved notifications',
      'Route the alerts you want to that receiver (route.routes[].receiver), then reload Alertmanager (SIGHUP or POST /-/reload)',
    ],
  },
  sample: {
    headers: { 'content-type': 'application/json' },
    body: {
      receiver: 'sms',
      status: 'firing',
      alerts: [
        {
          status: 'firing',
          labels: {
            alertname: 'ProbeFailure',
            instance: 'https://server.example.org',
            job: 'http_checks',
            severity: 'critical',
          },
          annotations: {
            description: 'Instance https://server.example.org has been down for over 5m. Job: http_checks',
            summary: 'BlackBox Probe Failure: https://server.example.org',
          },
          startsAt: '2023-02-06T13:08:45.828Z',
          endsAt: '0001-01-01T00:00:00Z',
          generatorURL: 'http://prometheus.example.org:9090/graph?g0.expr=probe_success+%3D%3D+0&g0.tab=1',
          fingerprint: '1a30ba71cca2921f',
        },
      ],
      groupLabels: { alertname: 'ProbeFailure' },
      commonLabels: { alertname: 'ProbeFailure', severity: 'critical' },
      commonAnnotations: {},
      externalURL: 'http://prometheus.example.org:9093',
      version: '4',
      groupKey: '{}/{severity="critical"}:{alertname="ProbeFailure"}',
      truncatedAlerts: 0,
    },
  },
};
