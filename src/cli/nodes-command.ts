/**
 * `hookgate nodes`: the `hookgate serve` processes registered in the store (one on SQLite, any number on
 * PostgreSQL), each live or gone by when it was last seen. Read-only: it never creates a store.
 */
import type { Command } from 'commander';
import { NODE_LIVE_MS, type NodeInfo } from '../store/types.js';
import { withStore } from './context.js';
import { printJson, table, time } from './format.js';
import { configOption, jsonOption } from './options.js';

export interface NodeView extends NodeInfo {
  /** `live`: seen within NODE_LIVE_MS; `gone`: killed, or cut off from the database (its leases expire). */
  state: 'live' | 'gone';
}

export function addNodesCommand(program: Command): void {
  program
    .command('nodes')
    .description(`the hookgate serve processes sharing the store: id, host, pid, version, url, started, last seen; live, or gone when not seen for ${NODE_LIVE_MS / 1000} s`)
    .addOption(jsonOption())
    .addOption(configOption())
    .action(async (o: { config?: string; json?: boolean }) => {
      await withStore(o.config, async (store) => {
        const now = Date.now();
        const nodes = (await store.listNodes()).map((n) => nodeView(n, now));
        if (o.json) return printJson(nodes);
        const rows = nodes.map((n) => ({ ...n, started: time(n.startedAt), lastSeen: ago(now - n.lastSeenAt) }));
        process.stdout.write(`${table(rows, ['id', 'state', 'host', 'pid', 'version', 'url', 'started', 'lastSeen'])}\n`);
        const live = nodes.filter((n) => n.state === 'live').length;
        if (nodes.length) process.stdout.write(`${live} live, ${nodes.length - live} gone\n`);
      });
    });
}

export function nodeView(n: NodeInfo, now: number): NodeView {
  return { ...n, state: now - n.lastSeenAt <= NODE_LIVE_MS ? 'live' : 'gone' };
}

/** `4 s ago`, `12 min ago`, `3 h ago`, `2 d ago`. */
export function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s} s ago`;
  if (s < 7200) return `${Math.round(s / 60)} min ago`;
  if (s < 172_800) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86_400)} d ago`;
}
