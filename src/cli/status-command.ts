/**
 * `hookgate status`: one screen of the service's state, read from the store (never from a running process, never
 * creating a store): queue depths, the last heartbeat, failures in the last hour, and the nodes on a shared store.
 *
 * The last heartbeat is derived: nothing records a heartbeat's time on its own, so it is the newest of the main
 * session's consumed system events (`consumedAt`: a heartbeat consumed them) and its transcript turns not of a run
 * (a heartbeat's turn). A heartbeat that had no events and wrote no turn is not seen.
 */
import type { Command } from 'commander';
import type { QueueDepths, RecentFailures } from '../store/pages.js';
import { MAIN_SESSION_KEY, type SessionDetail } from '../store/types.js';
import { withStore } from './context.js';
import { printJson, time } from './format.js';
import { ago, nodeView, type NodeView } from './nodes-command.js';
import { configOption, jsonOption } from './options.js';

/** "Failures in the last hour". */
export const FAILURE_WINDOW_MS = 3_600_000;

export interface StatusView {
  at: number;
  queues: QueueDepths;
  /** Epoch ms of the main session's last heartbeat as the store shows it (see above); null when none is seen. */
  lastHeartbeatAt: number | null;
  failuresLastHour: RecentFailures;
  /** On a shared store (PostgreSQL) only: the registered nodes, live or gone. */
  nodes?: NodeView[];
}

/** The newest sign of a heartbeat in the main session: a consumed event, or a turn that belongs to no run. */
export function lastHeartbeatOf(main: SessionDetail | undefined): number | null {
  if (!main) return null;
  let last: number | null = null;
  for (const e of main.recentEvents)
    if (e.consumedAt !== null && (last === null || e.consumedAt > last)) last = e.consumedAt;
  for (const m of main.transcript) if (m.runId === null && (last === null || m.createdAt > last)) last = m.createdAt;
  return last;
}

export function statusText(s: StatusView): string {
  const r = s.queues.runs;
  const f = s.failuresLastHour;
  const lines = [
    `runs:          ${r.queued} queued, ${r.running} running`,
    `outbox:        ${s.queues.outboxPending} pending`,
    `system events: ${s.queues.systemEventsPending} pending`,
    `heartbeat:     ${s.lastHeartbeatAt === null ? 'none seen' : `last ${time(s.lastHeartbeatAt)} (${ago(s.at - s.lastHeartbeatAt)})`}`,
    `last hour:     ${f.runsFailed} runs failed, ${f.deliveriesDead} deliveries dead-lettered, ${f.refused} requests refused`,
  ];
  if (s.nodes) {
    const live = s.nodes.filter((n) => n.state === 'live');
    lines.push(
      `nodes:         ${live.length} live, ${s.nodes.length - live.length} gone${live.length ? ` (${live.map((n) => n.id).join(', ')})` : ''}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

export function addStatusCommand(program: Command): void {
  program
    .command('status')
    .description(
      'one screen: queue depths, the last heartbeat, failures in the last hour, nodes (PostgreSQL); read from the store',
    )
    .addOption(jsonOption())
    .addOption(configOption())
    .action(async (o: { config?: string; json?: boolean }) => {
      await withStore(o.config, async (store) => {
        const at = Date.now();
        const [queues, failuresLastHour, main, nodes] = await Promise.all([
          store.queueDepths(),
          store.failuresSince(at - FAILURE_WINDOW_MS),
          store.getSession(MAIN_SESSION_KEY),
          store.shared ? store.listNodes() : Promise.resolve(undefined),
        ]);
        const view: StatusView = {
          at,
          queues,
          lastHeartbeatAt: lastHeartbeatOf(main),
          failuresLastHour,
          ...(nodes ? { nodes: nodes.map((n) => nodeView(n, at)) } : {}),
        };
        if (o.json) return printJson(view);
        process.stdout.write(statusText(view));
      });
    });
}
