/**
 * `hookgate nodes`: the `hookgate serve` processes registered in the store (one on SQLite, any number on
 * PostgreSQL), each live or gone by when it was last seen. It never creates a store; `nodes prune` removes the rows
 * of nodes gone for long (audited), never a live one.
 */
import type { Command } from 'commander';
import { parseDuration } from '../config/schema/common.js';
import { CliError } from '../errors.js';
import { NODE_LIVE_MS, type NodeInfo } from '../store/types.js';
import { auditCli } from './audit-command.js';
import { withStore } from './context.js';
import { printJson, table, time } from './format.js';
import { configOption, jsonOption } from './options.js';

export interface NodeView extends NodeInfo {
  /** `live`: seen within NODE_LIVE_MS; `gone`: killed, or cut off from the database (its leases expire). */
  state: 'live' | 'gone';
}

/** `nodes prune`'s default: a node gone for a day is not coming back as itself (a restart registers a new id). */
const PRUNE_DEFAULT = '24h';
const LIVE_S = NODE_LIVE_MS / 1000;

export function addNodesCommand(program: Command): void {
  const nodes = program
    .command('nodes')
    .description(
      `the hookgate serve processes sharing the store: id, host, pid, version, url, started, last seen; live, or gone when not seen for ${NODE_LIVE_MS / 1000} s`,
    )
    .addOption(jsonOption())
    .addOption(configOption())
    .action(async (o: { config?: string; json?: boolean }) => {
      await withStore(o.config, async (store) => {
        const now = Date.now();
        const nodes = (await store.listNodes()).map((n) => nodeView(n, now));
        if (o.json) return printJson(nodes);
        const rows = nodes.map((n) => ({ ...n, started: time(n.startedAt), lastSeen: ago(now - n.lastSeenAt) }));
        process.stdout.write(
          `${table(rows, ['id', 'state', 'host', 'pid', 'version', 'url', 'started', 'lastSeen'])}\n`,
        );
        const live = nodes.filter((n) => n.state === 'live').length;
        if (nodes.length) process.stdout.write(`${live} live, ${nodes.length - live} gone\n`);
      });
    });
  nodes
    .command('prune')
    .description(`remove the rows of nodes not seen for longer than --older-than (default ${PRUNE_DEFAULT}); audited`)
    .option('--older-than <duration>', `not seen for this long ("24h", "7d"; at least ${LIVE_S} s)`, PRUNE_DEFAULT)
    .option('--dry-run', 'list what would be removed, remove nothing')
    .addOption(jsonOption())
    .addOption(configOption())
    .action(async (_: unknown, cmd: Command) => {
      // `nodes` itself takes --json and --config too: given after `prune`, they are read from either.
      const o = cmd.optsWithGlobals<{ olderThan: string; dryRun?: boolean; config?: string; json?: boolean }>();
      const ms = pruneAge(o.olderThan);
      await withStore(o.config, async (store) => {
        const now = Date.now();
        const stale = (await store.listNodes()).filter((n) => now - n.lastSeenAt > ms);
        if (!o.dryRun) {
          // A node that comes back after all registers its row again at its next refresh: nothing is lost.
          for (const n of stale) await store.removeNode(n.id);
          const ids = stale.map((n) => n.id);
          if (ids.length) await auditCli(store, 'nodes.pruned', { nodes: ids, olderThan: o.olderThan });
        }
        if (o.json) return printJson(stale.map((n) => nodeView(n, now)));
        const verb = o.dryRun ? 'would remove' : 'removed';
        const lines = stale.map((n) => `${n.id}  ${n.host}  last seen ${ago(now - n.lastSeenAt)}`);
        lines.push(`${verb} ${stale.length} node${stale.length === 1 ? '' : 's'} not seen for ${o.olderThan}`);
        process.stdout.write(`${lines.join('\n')}\n`);
      });
    });
}

/** `--older-than`: a duration, at least the live window (a node seen within it is live and is never pruned). */
function pruneAge(spec: string): number {
  const ms = parseDuration(spec);
  if (ms === undefined) {
    throw new CliError('cli_usage', `--older-than ${JSON.stringify(spec)}: expected a duration ("30m", "24h", "7d")`);
  }
  if (ms < NODE_LIVE_MS) {
    throw new CliError('cli_usage', `--older-than must be at least ${LIVE_S} s: a node seen within that is live`);
  }
  return ms;
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
