/**
 * The gmail preset: the mail watcher (`gog gmail watch serve`) posts `{ source: "gmail", messages: [...] }` to
 * `{hooks.path}/gmail`; every message becomes one agent run (`forEach: "messages"`). Everything Gmail-specific
 * lives here.
 */
import type { HooksConfig, MappingConfig } from '../../../config/schema/hooks.js';
import { newId } from '../../../ids.js';
import { lookupPath } from '../templates.js';
import { MAX_PATH_BODY_BYTES, type Preset } from './preset.js';

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

/**
 * Body allowance of `{hooks.path}/gmail` when the gmail preset is on: a push carries up to ~100 messages of
 * `gmail.maxBytes` body each (×3 for JSON escaping and the other fields, + 8 KiB of headers per message).
 * `max(hooks.maxBodyBytes, min(32 MiB, 100 × (3 × gmail.maxBytes + 8192)))` — 6 819 200 bytes by default.
 */
export function gmailBodyAllowance(hooks: Pick<HooksConfig, 'maxBodyBytes' | 'gmail'>): number {
  return Math.max(hooks.maxBodyBytes, Math.min(MAX_PATH_BODY_BYTES, 100 * (3 * hooks.gmail.maxBytes + 8192)));
}

/**
 * A message without an `id` (a blank one, or not a string or number) would render `hook:gmail:`, one session shared
 * by every such message: it gets a fresh `hook:gmail:<uuid>` of its own instead (and still runs).
 */
export function gmailSessionKeyFor(payload: Record<string, unknown>): string | undefined {
  const id = lookupPath(payload, 'messages[0].id');
  if ((typeof id === 'string' && id.trim() !== '') || (typeof id === 'number' && Number.isFinite(id))) return undefined;
  return `hook:gmail:${newId()}`;
}

export const gmail: Preset = {
  name: 'gmail',
  path: 'gmail',
  mapping: (hooks) => gmailPreset(hooks.gmail),
  sessionKeyFor: gmailSessionKeyFor,
  bodyAllowance: gmailBodyAllowance,
  // Mail is email wherever it arrives: on the gmail path, or with `source: "gmail"` at a custom mapping.
  content: { source: 'email', payloadSource: 'gmail' },
};
