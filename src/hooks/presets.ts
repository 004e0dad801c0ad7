/**
 * Built-in mappings (`hooks.presets`). They are appended after the custom `hooks.mappings`, so a mapping of yours
 * with the same `match.path` comes first and wins.
 *
 * Only `gmail` exists: the mail watcher (`gog gmail watch serve`) posts `{ source: "gmail", messages: [...] }` to
 * `{hooks.path}/gmail`; every message becomes one agent run (`forEach: "messages"`).
 */
import type { HooksConfig, MappingConfig } from '../config/schema/hooks.js';

export type PresetName = 'gmail';

/** Upper bound of any per-path body allowance: 32 MiB. */
export const MAX_PATH_BODY_BYTES = 32 * 1024 * 1024;

export const GMAIL_SESSION_KEY = 'hook:gmail:{{messages[0].id}}';

/** The four lines of the reference: sender, subject, snippet, body of the (current) message. */
export const GMAIL_MESSAGE_TEMPLATE = [
  'New email from {{messages[0].from}}',
  'Subject: {{messages[0].subject}}',
  '{{messages[0].snippet}}',
  '{{messages[0].body}}',
].join('\n');

/** The gmail preset as a mapping, with `hooks.gmail.model` / `thinking` / `allowUnsafeExternalContent` applied. */
export function gmailPreset(gmail: HooksConfig['gmail']): MappingConfig {
  return {
    id: 'gmail',
    match: { path: 'gmail' },
    action: 'agent',
    wakeMode: 'now',
    name: 'Gmail',
    sessionKey: GMAIL_SESSION_KEY,
    messageTemplate: GMAIL_MESSAGE_TEMPLATE,
    deliver: true,
    model: gmail.model,
    thinking: gmail.thinking,
    allowUnsafeExternalContent: gmail.allowUnsafeExternalContent ?? false,
    forEach: 'messages',
  };
}

/** The preset mappings named in `hooks.presets`, in order, without duplicates. */
export function presetMappings(hooks: Pick<HooksConfig, 'presets' | 'gmail'>): Array<{ name: PresetName; mapping: MappingConfig }> {
  const out: Array<{ name: PresetName; mapping: MappingConfig }> = [];
  for (const name of new Set(hooks.presets)) {
    if (name === 'gmail') out.push({ name, mapping: gmailPreset(hooks.gmail) });
  }
  return out;
}

/**
 * Body allowance of `{hooks.path}/gmail` when the gmail preset is on: a push carries up to ~100 messages of
 * `gmail.maxBytes` body each (×3 for JSON escaping and the other fields, + 8 KiB of headers per message).
 * `max(hooks.maxBodyBytes, min(32 MiB, 100 × (3 × gmail.maxBytes + 8192)))` — 6 819 200 bytes by default.
 */
export function gmailBodyAllowance(hooks: Pick<HooksConfig, 'maxBodyBytes' | 'gmail'>): number {
  return Math.max(hooks.maxBodyBytes, Math.min(MAX_PATH_BODY_BYTES, 100 * (3 * hooks.gmail.maxBytes + 8192)));
}
