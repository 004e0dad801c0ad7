import type { ConfigIssue } from '../../errors.js';
import { startsWithAny } from '../lookup.js';
import type { SenderPresetConfig } from '../schema/hooks.js';
import type { RawConfig } from '../schema/index.js';
import { actionFieldsCheck, bearerSecretCheck } from './mappings.js';
import type { ConfigFindings } from './types.js';

/**
 * `hooks.presets[]` sender presets: one path each (not another preset's, nor the Gmail push's), an id (its path) no
 * custom mapping has, session keys the prefixes admit, a bearer secret (alertmanager) that is no hook token, and the
 * fields a mapping's are checked for. A custom mapping
 * that takes every request on a preset's path is a warning: the preset never runs.
 */
export function checkPresets(config: RawConfig): ConfigFindings {
  const { hooks } = config;
  const issues: ConfigIssue[] = [];
  const warnings: string[] = [];
  const checkFields = actionFieldsCheck(config, issues);
  const checkBearer = bearerSecretCheck(config, issues);
  const prefixes = hooks.allowedSessionKeyPrefixes;

  // Paths taken before the senders': the gmail preset's and the Gmail push receiver's.
  const taken = new Map<string, string>();
  if (hooks.presets.includes('gmail') || hooks.gmail.account) taken.set('gmail', 'the gmail preset');
  if (hooks.gmail.account) taken.set(hooks.gmail.pushPath, 'hooks.gmail.pushPath');
  const mappingIds = new Map<string, number>();
  hooks.mappings.forEach((m, i) => {
    const id = m.id ?? `mapping-${i + 1}`;
    if (!mappingIds.has(id)) mappingIds.set(id, i);
  });

  hooks.presets.forEach((p, i) => {
    if (typeof p === 'string') return;
    const at = `hooks.presets[${i}]`;
    const other = taken.get(p.path);
    if (other === undefined) taken.set(p.path, at);
    else
      issues.push({
        path: `${at}.path`,
        message: `"${p.path}" is already the path of ${other}: give this preset a path of its own`,
      });
    const sameId = mappingIds.get(p.path);
    if (sameId !== undefined) {
      issues.push({
        path: `${at}.path`,
        message: `"${p.path}" is the id of hooks.mappings[${sameId}] too, and a preset's id is its path: rename that mapping's id or give this preset another path`,
      });
    }
    checkFields(p, at);
    checkBearer(p.signature, `${at}.secret${p.signature.secrets.length > 1 ? 's' : ''}`);
    const ownKeys = p.sessionKey === undefined && p.action === 'agent';
    if (ownKeys && prefixes !== undefined && prefixes.length > 0 && !startsWithAny(`hook:${p.path}:x`, prefixes)) {
      issues.push({
        path: `${at}.path`,
        message: `the preset's session keys are hook:${p.path}:…, which hooks.allowedSessionKeyPrefixes (${prefixes.join(', ')}) does not admit: add "hook:" or "hook:${p.path}:"`,
      });
    }
    const shadow = shadowingMapping(hooks.mappings, p);
    if (shadow !== undefined) {
      warnings.push(
        `${at} (${p.use} on "${p.path}") never matches: hooks.mappings[${shadow}] takes every request on that path (first match wins)`,
      );
    }
  });
  return { issues, warnings };
}

/** The first custom mapping that matches every request on the preset's path (no `match.source`, no `match.headers`). */
function shadowingMapping(mappings: RawConfig['hooks']['mappings'], p: SenderPresetConfig): number | undefined {
  const takesAll = (m: RawConfig['hooks']['mappings'][number]) =>
    m.match?.source === undefined && Object.keys(m.match?.headers ?? {}).length === 0;
  const i = mappings.findIndex((m) => (m.match?.path === undefined || m.match.path === p.path) && takesAll(m));
  return i < 0 ? undefined : i;
}
