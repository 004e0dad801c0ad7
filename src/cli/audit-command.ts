/** `hookgate audit`: the audit trail in the store (config reloads, token rotations, repairs, lockouts, routes set), newest first. */
import { type Command, Option } from 'commander';
import { AUDIT_KINDS, type AuditKind, auditEntry } from '../audit.js';
import type { AuditEntry } from '../store/audit-types.js';
import { logSafe } from '../text-safe.js';
import type { CliStore } from './context.js';
import { withStore } from './context.js';
import { printJson, routeText, table, time } from './format.js';
import { configOption, jsonOption, limitOption } from './options.js';
import { sinceTime } from './store-commands.js';

/** Rows read per store call while gathering `--limit` records (the admin lists' page size). */
const PAGE = 200;

export function addAuditCommand(program: Command): void {
  program
    .command('audit')
    .description(
      "the audit trail, newest first: config reloads (changes by key path, secrets masked), token rotations, admin repairs, lockouts, sessions' routes set",
    )
    .option('--since <when>', 'only records within this long ("2h", "30m", "7d") or since this ISO time')
    .addOption(new Option('--kind <kind>', 'only records of this kind').choices(AUDIT_KINDS))
    .addOption(limitOption())
    .addOption(jsonOption())
    .addOption(configOption())
    .action(async (o: { since?: string; kind?: AuditKind; limit: number; json?: boolean; config?: string }) => {
      const since = o.since === undefined ? undefined : sinceTime(o.since, Date.now());
      await withStore(o.config, async (store) => {
        const list: AuditEntry[] = [];
        let cursor: string | undefined;
        do {
          const page = await store.pageAudit({
            limit: Math.min(PAGE, o.limit - list.length),
            kind: o.kind,
            since,
            ...(cursor ? { cursor } : {}),
          });
          list.push(...page.items);
          cursor = page.nextCursor ?? undefined;
        } while (cursor && list.length < o.limit);
        if (o.json) return printJson(list);
        const rows = list.map((e) => ({ at: time(e.at), kind: e.kind, actor: e.actor, what: summary(e) }));
        process.stdout.write(`${table(rows, ['at', 'kind', 'actor', 'what'])}\n`);
      });
    });
}

/** One line of what a record says (its whole detail: --json). */
function summary(e: AuditEntry): string {
  const d = e.detail as Record<string, unknown>;
  const list = (v: unknown) => (Array.isArray(v) ? v.map(String).join(', ') : '');
  switch (e.kind) {
    case 'config.reload': {
      const changes = (d.changes as Array<{ path: string; op: string }> | undefined) ?? [];
      const more = Number(d.moreChanges ?? 0);
      return logSafe(
        `generation ${d.generation}: ${changes.map((c) => `${c.op === 'added' ? '+' : c.op === 'removed' ? '-' : '~'}${c.path}`).join(' ') || 'no change'}${more ? ` (+${more} more)` : ''}`,
        300,
      );
    }
    case 'token.rotated': {
      const parts = [
        ['added', d.added],
        ['removed', d.removed],
        ['replaced', d.replaced],
      ]
        .filter(([, v]) => list(v))
        .map(([k, v]) => `${k} ${list(v)}`);
      return logSafe(`${d.path}: ${parts.join('; ') || (typeof d.op === 'string' ? d.op : 'changed')}`, 300);
    }
    case 'config.rejected':
      return logSafe(`${d.reason}: ${list(d.paths) || '(file)'}`, 300);
    case 'admin.retry':
      return d.runId ? `run ${d.runId}` : d.deliveryId ? `delivery ${d.deliveryId}` : logSafe(JSON.stringify(d), 300);
    case 'lockout':
      return `locked ${d.lockoutSeconds} s after ${d.failures} failures in ${d.windowSeconds} s${d.listener === 'admin' ? ' (admin listener)' : ''}`;
    case 'session.route':
      return logSafe(`session ${d.sessionKey}: ${routeOf(d.from) ?? 'none'} ⇒ ${routeOf(d.to) ?? 'none'}`, 300);
    case 'nodes.pruned':
      return logSafe(`${list(d.nodes)} (not seen for ${d.olderThan})`, 300);
    default:
      return logSafe(JSON.stringify(d), 300);
  }
}

/** A route in a `session.route` record's detail, as `sessions show` prints one; undefined for none. */
function routeOf(v: unknown): string | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const r = v as Record<string, unknown>;
  return routeText(String(r.channel), String(r.to), typeof r.accountId === 'string' ? r.accountId : null);
}

/**
 * A change made by the CLI (a repair, a session's route), recorded with actor "cli". The change is done already: a
 * record that cannot be stored is said on stderr, not turned into a failure of the command.
 */
export async function auditCli(
  store: Pick<CliStore, 'appendAudit'>,
  kind: AuditKind,
  detail: Record<string, unknown>,
): Promise<void> {
  try {
    await store.appendAudit([auditEntry(kind, 'cli', detail)]);
  } catch (err) {
    process.stderr.write(
      `hookgate: the change is done, but its audit record could not be stored: ${(err as Error).message}\n`,
    );
  }
}
