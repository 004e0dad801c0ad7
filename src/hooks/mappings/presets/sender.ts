/**
 * Sender presets: one config line per sender (`hooks.presets: [{ use: "github", secret: … }]`). A sender preset is a
 * plain data file in this folder (github.ts, stripe.ts, …): where its event type is read, a message per event type,
 * the session key of each thing it reports on, its setup steps and a sample delivery. The catalogue (index.ts) names
 * them. This file turns a preset and its config entry into a mapping: the sender's signature (built by the config
 * from `secret`, with the scheme config/schema/hooks.ts `SENDER_PRESETS` names), its path, and its templates, which
 * pick their wording by the delivery's event type. Events the entry does not take do not match (compile.ts).
 */
import {
  eventAllowed,
  type MappingConfig,
  type SenderName,
  type SenderPresetConfig,
} from '../../../config/schema/hooks.js';
import { newId } from '../../../ids.js';
import { type CompiledTemplate, compileTemplate, lookupPath } from '../templates.js';

/**
 * A message: a template, or, where no template can say it (a list of any length: Alertmanager's alerts), composed by
 * code from the same context. It never throws, and reads the payload as a template does (`lookupPath`).
 */
export type Message = string | CompiledTemplate;

/** Templates tried in order: the first whose every expression renders non-blank is used (templates.ts `complete`). */
export type Candidates = readonly string[];

/** Where a delivery's event type is: a request header (lower-case name), a payload field (a path), or read by code. */
export type EventSource =
  | { readonly header: string }
  | { readonly field: string }
  | { readonly read: (payload: Record<string, unknown>) => string | undefined };

export interface SenderPreset {
  /** The catalogue name (`use`): the default path, and the namespace of the session keys (`hook:<path>:`). */
  readonly name: SenderName;
  /** How a setup command names the sender. */
  readonly title: string;
  /** The runs' default `name` (templated), shown in the main session's summary. */
  readonly runName: string;
  readonly event: EventSource;
  /** A message per event type; their keys are the default `events`. */
  readonly messages: Readonly<Record<string, Message>>;
  /** The message of a taken event type without wording of its own. */
  readonly defaultMessage: string;
  /** The default `events` when they are not the worded ones (`["*"]`: every event). */
  readonly defaultEvents?: readonly string[];
  /** The session key after `hook:<path>:`, per event type; `*` for the others. None complete: a fresh key. */
  readonly sessionKeys: Readonly<Record<string, Candidates>> & { readonly '*': Candidates };
  /** With `channel` set to this platform and no `to`, the reply goes to the conversation the delivery came from. */
  readonly reply?: { readonly channel: string; readonly to: Candidates };
  readonly setup: SenderSetup;
  /** A delivery as the sender makes it, for a test send: signed at send time with the entry's secret. */
  readonly sample: SenderSample;
}

export interface SenderSetup {
  /** `generate`: the user makes the secret and gives it to the sender (GitHub); `sender`: the sender shows one to copy. */
  readonly secret: 'generate' | 'sender';
  /** How a generated secret (`generate`) is written: `base64url` (the default) or `hex`, whichever the sender takes. */
  readonly secretFormat?: 'base64url' | 'hex';
  /** The sender-side steps, in order; `<url>` stands for the hook's public URL, `<events>` for the event types. */
  readonly steps: readonly string[];
}

export interface SenderSample {
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Readonly<Record<string, unknown>>;
  /**
   * A top-level body field holding the send time in Unix milliseconds, which the sender signs and hookgate checks
   * (Linear's `webhookTimestamp`): a test send sets it to its own time before signing.
   */
  readonly sentAtField?: string;
}

/** The sender-specific parts of a sender preset's compiled mapping (compile.ts). */
export interface SenderParts {
  readonly events: EventMatch;
  /** The message (or a wake's text), worded by event type. */
  readonly message: CompiledTemplate;
  /** `hook:<path>:<thing>`: undefined when the entry sets its own `sessionKey`, or for a wake (the main session). */
  readonly sessionKey: CompiledTemplate | undefined;
  /** The reply's recipient when the entry asks for the sender's own platform without a `to`. */
  readonly to: CompiledTemplate | undefined;
}

export interface EventMatch {
  /** The delivery's event type; undefined when it has none. */
  of(payload: Record<string, unknown>, headers: Readonly<Record<string, string>>): string | undefined;
  /** Whether the entry's `events` take a delivery of this type. */
  takes(event: string | undefined): boolean;
}

/** The mapping a sender preset entry stands for: everything but its event-dependent templates (`compileSender`). */
export function senderMapping(preset: SenderPreset, entry: SenderPresetConfig): MappingConfig {
  return {
    id: entry.path,
    match: { path: entry.path },
    action: entry.action,
    wakeMode: entry.wakeMode,
    name: entry.name ?? preset.runName,
    agentId: entry.agentId,
    sessionKey: entry.sessionKey,
    // One conversation per thing (a pull request, a customer, a channel): its next event sees the earlier turns.
    sessionMode: entry.sessionMode ?? 'persistent',
    deliver: entry.deliver,
    channel: entry.channel,
    to: entry.to,
    accountId: entry.accountId,
    model: entry.model,
    thinking: entry.thinking,
    timeoutSeconds: entry.timeoutSeconds,
    allowUnsafeExternalContent: entry.allowUnsafeExternalContent,
    signature: entry.signature,
    allowFrom: entry.allowFrom,
    rateLimit: entry.rateLimit,
  };
}

/** The event types an entry takes: its `events`, else the preset's default and the events it words itself. */
export function takenEvents(
  preset: SenderPreset,
  entry: Pick<SenderPresetConfig, 'events' | 'templates'>,
): readonly string[] {
  if (entry.events) return entry.events;
  const own = Object.keys(entry.templates ?? {}).filter((e) => e !== '*');
  return [...new Set([...(preset.defaultEvents ?? Object.keys(preset.messages)), ...own])];
}

function eventReader(source: EventSource): EventMatch['of'] {
  if ('header' in source) {
    const name = source.header;
    return (_payload, headers) => {
      const v = Object.hasOwn(headers, name) ? headers[name]!.trim() : '';
      return v === '' ? undefined : v;
    };
  }
  if ('field' in source) {
    const field = source.field;
    return (payload) => {
      const v = lookupPath(payload, field);
      return typeof v === 'string' && v !== '' ? v : undefined;
    };
  }
  return (payload) => source.read(payload);
}

/** The first candidate that renders whole, else ''. */
function firstComplete(candidates: Candidates): CompiledTemplate {
  const compiled = candidates.map((c) => compileTemplate(c, { complete: true }));
  return (ctx) => {
    for (const t of compiled) {
      const s = t(ctx).trim();
      if (s !== '') return s;
    }
    return '';
  };
}

/** A template chosen per request by the delivery's event type, `fallback` for the others. */
function byEvent(
  of: EventMatch['of'],
  templates: ReadonlyMap<string, CompiledTemplate>,
  fallback: CompiledTemplate,
): CompiledTemplate {
  return (ctx) => {
    const event = of(ctx.payload as Record<string, unknown>, ctx.headers);
    return ((event !== undefined ? templates.get(event) : undefined) ?? fallback)(ctx);
  };
}

/** A sender preset entry's event filter and templates, compiled once per config generation. */
export function compileSender(preset: SenderPreset, entry: SenderPresetConfig): SenderParts {
  const of = eventReader(preset.event);
  const taken = takenEvents(preset, entry);
  const events: EventMatch = { of, takes: (event) => eventAllowed(taken, event) };

  const wording: Record<string, Message> = { ...preset.messages, ...entry.templates };
  const compile = (m: Message): CompiledTemplate => (typeof m === 'string' ? compileTemplate(m) : m);
  const messages = new Map<string, CompiledTemplate>();
  for (const [event, text] of Object.entries(wording)) if (event !== '*') messages.set(event, compile(text));
  const message = byEvent(of, messages, compile(wording['*'] ?? preset.defaultMessage));

  let sessionKey: CompiledTemplate | undefined;
  if (entry.sessionKey === undefined && entry.action === 'agent') {
    const keys = new Map<string, CompiledTemplate>();
    for (const [event, candidates] of Object.entries(preset.sessionKeys))
      if (event !== '*') keys.set(event, firstComplete(candidates));
    const thing = byEvent(of, keys, firstComplete(preset.sessionKeys['*']));
    const namespace = `hook:${entry.path}:`;
    // Nothing to group by (a delivery without the fields its key is made of): a conversation of its own.
    sessionKey = (ctx) => namespace + (thing(ctx) || newId());
  }

  const to =
    preset.reply && entry.to === undefined && entry.channel === preset.reply.channel
      ? firstComplete(preset.reply.to)
      : undefined;
  return { events, message, sessionKey, to };
}
