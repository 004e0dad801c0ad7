/**
 * The parts of an OpenClaw config that hooks lead to, for `hookgate import openclaw` (openclaw-import.ts): the agents
 * and the model providers they run on, and the messaging platforms replies go to. Only what hookgate can use is
 * converted; everything else is reported dropped, with why and what to do instead.
 */

export interface ReportLine {
  /** The OpenClaw key path. */
  key: string;
  action: 'copied' | 'converted' | 'dropped';
  /** How it was converted, or why it was dropped and what to do instead. Never a secret's value. */
  note?: string;
}

export interface Converted {
  config: Record<string, Record<string, unknown>>;
  /** A comment written above the key at this dotted path. */
  comments: Record<string, string>;
  report: ReportLine[];
}

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A secret as hookgate writes it, from OpenClaw's forms: a string (`${VAR}` kept; a literal written into the new file,
 * mode 0600), `{ env }` / `{ file }`, or a SecretRef `{ source: "env" | "file", id }`. Undefined when it cannot be read.
 */
export function secretOf(v: unknown): { value: unknown; how: 'copied' | 'converted'; note: string } | undefined {
  if (typeof v === 'string') {
    return /\$\{[A-Za-z_]\w*\}/.test(v)
      ? { value: v, how: 'copied', note: 'kept as its ${ENV} reference' }
      : { value: v, how: 'copied', note: 'written into the new file (mode 0600), as OpenClaw held it' };
  }
  if (!isObject(v)) return undefined;
  if (typeof v.env === 'string')
    return { value: { env: v.env }, how: 'copied', note: `from environment variable ${v.env}` };
  if (typeof v.file === 'string') return { value: { file: v.file }, how: 'copied', note: `read from ${v.file}` };
  if (v.source === 'env' && typeof v.id === 'string')
    return { value: { env: v.id }, how: 'converted', note: `SecretRef → { env: "${v.id}" }` };
  if (v.source === 'file' && typeof (v.path ?? v.id) === 'string') {
    const file = String(v.path ?? v.id);
    return {
      value: { file },
      how: 'converted',
      note: `SecretRef → { file: "${file}" } (the whole file is the secret)`,
    };
  }
  return undefined;
}

/** Providers OpenClaw knows without a `models.providers` entry, as hookgate providers (keys from the environment). */
const BUILTIN_PROVIDERS: Record<string, Record<string, unknown>> = {
  anthropic: { api: 'anthropic-messages', apiKey: { env: 'ANTHROPIC_API_KEY' } },
  openai: { api: 'openai-chat', apiKey: { env: 'OPENAI_API_KEY' } },
  openrouter: { api: 'openai-chat', baseUrl: 'https://openrouter.ai/api/v1', apiKey: { env: 'OPENROUTER_API_KEY' } },
  ollama: { api: 'openai-chat', baseUrl: 'http://127.0.0.1:11434/v1' },
};
/** OpenClaw's provider APIs hookgate speaks. */
const APIS: Record<string, string> = {
  'openai-completions': 'openai-chat',
  'openai-chat': 'openai-chat',
  'anthropic-messages': 'anthropic-messages',
};

/** `agents` (the list and the default model) and the providers of every model the hooks use. */
export function convertAgents(src: Record<string, unknown>, referenced: Set<string>, out: Converted): void {
  const agents = isObject(src.agents) ? src.agents : {};
  const ocProviders = isObject(src.models) && isObject(src.models.providers) ? src.models.providers : {};
  const providers: Record<string, unknown> = {};
  const usable = new Set<string>(['echo']);
  for (const ref of referenced) {
    const id = ref.slice(0, ref.indexOf('/'));
    if (usable.has(id) || providers[id] !== undefined) continue;
    const p = providerOf(id, ocProviders[id], out);
    if (p) {
      providers[id] = p;
      usable.add(id);
    }
  }
  const modelOf = (v: unknown, at: string): string | undefined => {
    const ref = isObject(v) ? v.primary : v;
    if (typeof ref !== 'string') return undefined;
    if (usable.has(ref.slice(0, ref.indexOf('/')))) {
      out.report.push({
        key: at,
        action: isObject(v) ? 'converted' : 'copied',
        note: isObject(v) ? 'its primary model (hookgate has no fallbacks)' : undefined,
      });
      return ref;
    }
    out.report.push({
      key: at,
      action: 'dropped',
      note: `provider of ${ref} not convertible: configure it under models.providers`,
    });
    return undefined;
  };
  const defaults: Record<string, unknown> = {};
  const d = isObject(agents.defaults) ? agents.defaults : {};
  defaults.model = modelOf(d.model, 'agents.defaults.model') ?? 'echo/echo';
  if (defaults.model === 'echo/echo' && d.model === undefined) {
    out.report.push({
      key: 'agents.defaults.model',
      action: 'converted',
      note: 'none set: echo/echo, the built-in test model; point it at a real provider (docs/providers.md)',
    });
  }
  const list: Array<Record<string, unknown>> = [];
  for (const [i, a] of (Array.isArray(agents.list) ? agents.list : []).entries()) {
    if (!isObject(a) || typeof a.id !== 'string') continue;
    const agent: Record<string, unknown> = { id: a.id.toLowerCase() };
    if (a.default === true) agent.default = true;
    if (typeof a.name === 'string') agent.name = a.name;
    const model = a.model === undefined ? undefined : modelOf(a.model, `agents.list[${i}].model`);
    if (model) agent.model = model;
    list.push(agent);
    const rest = Object.keys(a).filter((k) => !['id', 'default', 'name', 'model'].includes(k));
    out.report.push({
      key: `agents.list[${i}]`,
      action: 'converted',
      note: `id${agent.default ? ', default' : ''}${agent.name ? ', name' : ''}${model ? ', model' : ''}`,
    });
    if (rest.length)
      out.report.push({
        key: `agents.list[${i}].{${rest.join(',')}}`,
        action: 'dropped',
        note: "workspace, tools and identity are OpenClaw's agent runtime: hookgate runs a model turn (agents[].systemPrompt for instructions)",
      });
  }
  if (!list.length) list.push({ id: 'main', default: true });
  out.config.agents = { defaults, list };
  out.config.models = { providers };
}

function providerOf(id: string, oc: unknown, out: Converted): Record<string, unknown> | undefined {
  if (!isObject(oc)) {
    const b = BUILTIN_PROVIDERS[id];
    if (b)
      out.report.push({
        key: `models.providers.${id}`,
        action: 'converted',
        note: `OpenClaw's built-in ${id} provider, as ${String(b.api)}${isObject(b.apiKey) ? ` (key from ${String(b.apiKey.env)})` : ''}`,
      });
    else
      out.report.push({
        key: `models.providers.${id}`,
        action: 'dropped',
        note: 'not configured and not a provider hookgate knows: add it under models.providers (docs/providers.md)',
      });
    return b ? { ...b } : undefined;
  }
  const api = typeof oc.api === 'string' ? APIS[oc.api] : 'openai-chat';
  if (!api) {
    out.report.push({
      key: `models.providers.${id}`,
      action: 'dropped',
      note: `api "${String(oc.api)}" is not one hookgate speaks (openai-chat, anthropic-messages, command)`,
    });
    return undefined;
  }
  const p: Record<string, unknown> = { api };
  if (typeof oc.baseUrl === 'string') p.baseUrl = oc.baseUrl;
  const key = oc.apiKey === undefined ? undefined : secretOf(oc.apiKey);
  if (key) p.apiKey = key.value;
  if (Array.isArray(oc.models))
    p.models = oc.models.map((m) => (isObject(m) ? m.id : m)).filter((m) => typeof m === 'string');
  out.report.push({
    key: `models.providers.${id}`,
    action: 'converted',
    note: `api ${api}; baseUrl, apiKey${key ? ` (${key.note})` : ''} and model ids kept`,
  });
  return p;
}

/** Per platform: hookgate's name, and each credential key → hookgate's key (secrets through `secretOf`). */
const PLATFORMS: Record<string, { to: string; keys: Record<string, string> }> = {
  telegram: { to: 'telegram', keys: { botToken: 'botToken', tokenFile: 'botToken' } },
  discord: { to: 'discord', keys: { token: 'botToken', botToken: 'botToken' } },
  slack: { to: 'slack', keys: { botToken: 'botToken' } },
  msteams: { to: 'msteams', keys: { appId: 'appId', appPassword: 'appPassword', tenantId: 'tenantId' } },
  googlechat: {
    to: 'googlechat',
    keys: { serviceAccountFile: 'serviceAccountFile', serviceAccount: 'serviceAccount' },
  },
  bluebubbles: { to: 'imessage', keys: { serverUrl: 'serverUrl', password: 'password' } },
  irc: {
    to: 'irc',
    keys: {
      host: 'host',
      port: 'port',
      tls: 'tls',
      nick: 'nick',
      password: 'password',
      username: 'username',
      realname: 'realname',
    },
  },
};
const SECRET_KEYS = new Set(['botToken', 'tokenFile', 'token', 'appPassword', 'password', 'serviceAccount']);
const UNSUPPORTED: Record<string, string> = {
  whatsapp:
    "OpenClaw's WhatsApp is WhatsApp Web (a linked device); hookgate sends through the WhatsApp Cloud API: set channels.whatsapp.accessToken and phoneNumberId (docs/channels.md)",
  imessage:
    "OpenClaw's iMessage drives the imsg CLI on a Mac; hookgate sends through BlueBubbles: set channels.imessage.serverUrl and password",
  signal:
    "OpenClaw talks to signal-cli's own daemon; hookgate sends through signal-cli-rest-api: set channels.signal.apiBaseUrl and number",
};

/** The platforms replies can go to, with their accounts; inbound chat settings are dropped (hookgate only delivers). */
export function convertChannels(
  src: Record<string, unknown>,
  _hooks: Record<string, unknown> | undefined,
  out: Converted,
): void {
  const channels: Record<string, unknown> = {};
  const oc = isObject(src.channels) ? src.channels : {};
  for (const [name, section] of Object.entries(oc)) {
    const spec = PLATFORMS[name];
    if (!spec || !isObject(section)) {
      const note =
        UNSUPPORTED[name] ??
        (name === 'defaults' || name === 'modelByChannel'
          ? 'inbound chat policy: hookgate only delivers replies'
          : 'no such platform in hookgate: an extension channel plugin can add it (docs/channels-extensions.md)');
      out.report.push({ key: `channels.${name}`, action: 'dropped', note });
      continue;
    }
    if (section.enabled === false) {
      out.report.push({ key: `channels.${name}`, action: 'dropped', note: 'enabled: false in OpenClaw' });
      continue;
    }
    const accounts = isObject(section.accounts) ? section.accounts : {};
    const top = credentials(section, spec, `channels.${name}`, out);
    const named: Record<string, unknown> = {};
    for (const [id, acc] of Object.entries(accounts)) {
      if (!isObject(acc)) continue;
      const creds = credentials(acc, spec, `channels.${name}.accounts.${id}`, out);
      if (id === 'default') Object.assign(top, creds);
      else named[id.toLowerCase()] = creds;
    }
    const ignored = Object.keys(section).filter((k) => !(k in spec.keys) && k !== 'accounts' && k !== 'enabled');
    if (ignored.length)
      out.report.push({
        key: `channels.${name}.{${ignored.join(',')}}`,
        action: 'dropped',
        note: 'inbound chat settings (who may talk to the agent): hookgate only delivers replies',
      });
    const platform = { ...top, ...(Object.keys(named).length ? { accounts: named } : {}) };
    channels[spec.to] = platform;
    out.report.push({
      key: `channels.${name}`,
      action: spec.to === name ? 'converted' : 'converted',
      note: `as channels.${spec.to}${Object.keys(named).length ? ` with accounts ${Object.keys(named).join(', ')}` : ''}`,
    });
  }
  channels.log = {};
  channels.default = { channel: 'log' };
  out.comments['channels.default'] =
    'Where `channel: "last"` replies go while the main session has no route (OpenClaw picked the only channel): set a route with hookgate sessions route main --channel ... --to ...';
  out.config.channels = channels;
}

function credentials(
  section: Record<string, unknown>,
  spec: { keys: Record<string, string> },
  at: string,
  out: Converted,
): Record<string, unknown> {
  const creds: Record<string, unknown> = {};
  for (const [from, to] of Object.entries(spec.keys)) {
    const v = section[from];
    if (v === undefined) continue;
    if (!SECRET_KEYS.has(from)) {
      creds[to] = v;
      continue;
    }
    const s = from === 'tokenFile' && typeof v === 'string' ? secretOf({ file: v }) : secretOf(v);
    if (s) {
      creds[to] = s.value;
      out.report.push({
        key: `${at}.${from}`,
        action: from === to ? s.how : 'converted',
        note: from === to ? s.note : `as ${to}: ${s.note}`,
      });
    } else {
      out.report.push({
        key: `${at}.${from}`,
        action: 'dropped',
        note: 'a secret reference hookgate cannot read: use "${ENV_VAR}", { env } or { file }',
      });
    }
  }
  return creds;
}
