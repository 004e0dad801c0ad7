/**
 * `hookgate import openclaw`: an OpenClaw config (`~/.openclaw/openclaw.json`) turned into a hookgate config. Pure:
 * the object in, the hookgate object, its comments and the report out; the command (openclaw-command.ts) reads,
 * copies transforms, writes and checks. Every key read is reported: copied, converted (how) or dropped (why, and what
 * to do instead). Secrets are carried over (as `${ENV}`, `{ env }`, `{ file }` or, when OpenClaw held them in
 * the file, written into the new file, mode 0600), never put into the report.
 */
import { isAbsolute, posix } from 'node:path';
import { convertAgents, convertChannels, type Converted, isObject, secretOf } from './openclaw-platforms.js';

export type { Converted, ReportLine } from './openclaw-platforms.js';

/** The `hooks` keys that mean the same in hookgate, copied as they are. */
const HOOKS_COPIED = [
  'enabled',
  'path',
  'maxBodyBytes',
  'defaultSessionKey',
  'allowRequestSessionKey',
  'allowedSessionKeyPrefixes',
  'allowedAgentIds',
];

/** Keys of `hooks.gmail` hookgate reads as they are. */
const GMAIL_USED = ['includeBody', 'maxBytes', 'model', 'thinking', 'allowUnsafeExternalContent'];
/** Keys of OpenClaw's Gmail watcher: kept (they say the block is the watcher's), each with what it means here. */
const GMAIL_WATCHER: Record<string, string> = {
  account:
    "the watcher's mailbox: hookgate's own chain stays off; keep `gog gmail watch serve` running, posting to {path}/gmail",
  topic: "the watcher's Pub/Sub topic",
  subscription: "the watcher's push subscription",
  pushToken: "authenticates Pub/Sub to the watcher: unused here (hookgate's own chain checks the push's OIDC token)",
  hookUrl: "point the watcher at this service: {path}/gmail on hookgate's port",
  serve: "the watcher's listener: hookgate does not start gog; run `gog gmail watch serve` as a service of its own",
  tailscale:
    'hookgate does not manage Tailscale: expose the watcher (or, with hookgate gmail setup, {path}/gmail-push) yourself',
};

export interface ImportOptions {
  /** Where the transforms will be for hookgate: `copy` (into <new config dir>/hooks/transforms) or left where they are. */
  transforms: 'copy' | 'point';
}

/** The conversion of a whole OpenClaw config. */
export function convertOpenClaw(input: unknown, opts: ImportOptions): Converted {
  const out: Converted = { config: {}, comments: {}, report: [] };
  const src = isObject(input) ? input : {};
  const hooks = isObject(src.hooks) ? src.hooks : undefined;
  if (!hooks) {
    out.report.push({
      key: 'hooks',
      action: 'dropped',
      note: 'no hooks section: hooks stay disabled (hooks.enabled: false)',
    });
  } else {
    convertHooks(hooks, out, opts);
  }
  const referenced = referencedModels(src, hooks);
  convertAgents(src, referenced, out);
  convertChannels(src, hooks, out);
  for (const key of Object.keys(src)) {
    if (!['hooks', 'agents', 'models', 'channels'].includes(key)) {
      out.report.push({
        key,
        action: 'dropped',
        note: 'not part of the hooks (gateway, tools, memory, plugins...): hookgate has no such section',
      });
    }
  }
  out.config.channels ??= {};
  return out;
}

function convertHooks(hooks: Record<string, unknown>, out: Converted, opts: ImportOptions): void {
  const h: Record<string, unknown> = {};
  out.config.hooks = h;
  out.comments.hooks = 'Imported from OpenClaw: senders keep their URL path, token and JSON (docs/openclaw.md)';
  for (const key of HOOKS_COPIED) {
    if (hooks[key] === undefined) continue;
    h[key] = hooks[key];
    out.report.push({ key: `hooks.${key}`, action: 'copied' });
  }
  if (hooks.token !== undefined || hooks.tokenFile !== undefined) {
    const s = hooks.token !== undefined ? secretOf(hooks.token) : secretOf({ file: hooks.tokenFile });
    if (s) {
      h.token = s.value;
      out.report.push({ key: 'hooks.token', action: s.how === 'copied' ? 'copied' : 'converted', note: s.note });
    } else {
      out.report.push({
        key: 'hooks.token',
        action: 'dropped',
        note: 'a secret reference hookgate cannot read: set hooks.token to "${ENV_VAR}", { env: "NAME" } or { file: "path" }',
      });
    }
  }
  if (hooks.presets !== undefined) {
    h.presets = hooks.presets;
    out.report.push({ key: 'hooks.presets', action: 'copied' });
  }
  if (Array.isArray(hooks.mappings)) {
    h.mappings = hooks.mappings;
    out.comments['hooks.mappings'] =
      'As OpenClaw had them: same matching, templates, transforms and session-key policy (docs/mappings.md)';
    out.report.push({ key: 'hooks.mappings', action: 'copied', note: `${hooks.mappings.length} mapping(s), verbatim` });
  }
  if (
    hooks.transformsDir !== undefined ||
    (Array.isArray(hooks.mappings) && hooks.mappings.some((m) => isObject(m) && m.transform !== undefined))
  ) {
    // OpenClaw resolves transformsDir inside <its config dir>/hooks/transforms; hookgate relative to its config dir.
    const dir = typeof hooks.transformsDir === 'string' ? hooks.transformsDir : undefined;
    if (dir !== undefined && !isAbsolute(dir))
      h.transformsDir = posix.join('hooks/transforms', dir.replaceAll('\\', '/'));
    else if (dir !== undefined) h.transformsDir = dir;
    out.report.push({
      key: 'hooks.transformsDir',
      action: 'converted',
      note:
        (dir !== undefined && !isAbsolute(dir)
          ? `as ${String(h.transformsDir)} (hookgate resolves it from the config's directory); `
          : '') +
        (opts.transforms === 'copy'
          ? "the modules were copied to hooks/transforms next to the new config, same layout; they get OpenClaw's { payload, headers, url, path }"
          : 'the modules stay in hooks/transforms of the OpenClaw directory, where the new config lives'),
    });
  }
  for (const [key, note] of Object.entries({
    sessionRetention: 'hookgate keeps sessions and runs until pruned by its own retention (docs/operations.md)',
    internal: "OpenClaw's internal event hooks (HOOK.md handlers) are not HTTP hooks: nothing to import",
  })) {
    if (hooks[key] !== undefined) out.report.push({ key: `hooks.${key}`, action: 'dropped', note });
  }
  const known = new Set([
    ...HOOKS_COPIED,
    'token',
    'tokenFile',
    'presets',
    'mappings',
    'transformsDir',
    'sessionRetention',
    'internal',
    'gmail',
  ]);
  for (const key of Object.keys(hooks)) {
    if (!known.has(key))
      out.report.push({
        key: `hooks.${key}`,
        action: 'dropped',
        note: 'not a key hookgate knows; see docs/config.md for the hooks section',
      });
  }
  if (isObject(hooks.gmail)) convertGmail(hooks.gmail, typeof hooks.path === 'string' ? hooks.path : '/hooks', h, out);
}

function convertGmail(gmail: Record<string, unknown>, path: string, h: Record<string, unknown>, out: Converted): void {
  const g: Record<string, unknown> = {};
  h.gmail = g;
  out.comments['hooks.gmail'] =
    `OpenClaw's Gmail watcher block: keep \`gog gmail watch serve\` posting to ${path}/gmail, or run \`hookgate gmail setup\` for hookgate's own chain (docs/gmail.md)`;
  for (const [key, value] of Object.entries(gmail)) {
    const at = `hooks.gmail.${key}`;
    if (GMAIL_USED.includes(key)) {
      g[key] = value;
      out.report.push({ key: at, action: 'copied' });
    } else if (key in GMAIL_WATCHER) {
      g[key] = key === 'pushToken' ? (secretOf(value)?.value ?? value) : value;
      out.report.push({ key: at, action: 'copied', note: GMAIL_WATCHER[key]!.replaceAll('{path}', path) });
    } else if (key === 'label' && typeof value === 'string') {
      g.label = value;
      g.labels = [value];
      out.report.push({
        key: at,
        action: 'converted',
        note: "also as labels: [label], what hookgate's own chain watches",
      });
    } else if (key === 'renewEveryMinutes' && typeof value === 'number' && value > 0) {
      g.renewEveryMinutes = value;
      const hours = Math.min(value / 60, 167);
      g.renewEveryHours = hours;
      out.report.push({
        key: at,
        action: 'converted',
        note: `also as renewEveryHours: ${hours} (hookgate's own chain)`,
      });
    } else {
      out.report.push({
        key: at,
        action: 'dropped',
        note: 'not a key of the Gmail block hookgate knows (docs/gmail.md)',
      });
    }
  }
}

/** Every `provider/model` ref the hooks use, directly or through the agents they run on. */
function referencedModels(src: Record<string, unknown>, hooks: Record<string, unknown> | undefined): Set<string> {
  const refs = new Set<string>();
  const add = (v: unknown) => {
    if (typeof v === 'string' && v.includes('/') && !v.includes('{{')) refs.add(v);
    if (isObject(v) && typeof v.primary === 'string') refs.add(v.primary);
  };
  if (hooks) {
    for (const m of Array.isArray(hooks.mappings) ? hooks.mappings : []) if (isObject(m)) add(m.model);
    if (isObject(hooks.gmail)) add(hooks.gmail.model);
  }
  const agents = isObject(src.agents) ? src.agents : {};
  if (isObject(agents.defaults)) add(agents.defaults.model);
  for (const a of Array.isArray(agents.list) ? agents.list : []) if (isObject(a)) add(a.model);
  return refs;
}
