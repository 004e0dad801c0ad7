/**
 * Built-in mappings (`hooks.presets`): the `gmail` preset, named by a string, and the sender presets, objects
 * `{ use: "<sender>", … }` (sender.ts). They are appended after the custom `hooks.mappings`, so a mapping of yours
 * on the same `match.path` comes first and wins. Adding a sender: its data file here, its line in `SENDERS`, and its
 * name and signature scheme in config/schema/hooks.ts `SENDER_PRESETS` (the compiler asks for each).
 */
import type { HooksConfig, MappingConfig, SenderName, SenderPresetConfig } from '../../../config/schema/hooks.js';
import type { ContentSource } from '../../../store/types.js';
import { alertmanager } from './alertmanager.js';
import { github } from './github.js';
import { gitlab } from './gitlab.js';
import { gmail } from './gmail.js';
import { linear } from './linear.js';
import type { Preset, PresetName } from './preset.js';
import { type SenderPreset, senderMapping } from './sender.js';
import { sentry } from './sentry.js';
import { shopify } from './shopify.js';
import { slack } from './slack.js';
import { standardWebhooks } from './standard-webhooks.js';
import { stripe } from './stripe.js';
import { twilio } from './twilio.js';

export type { PresetName } from './preset.js';

const PRESETS: Readonly<Record<PresetName, Preset>> = { gmail };

/** The sender presets' catalogue. */
const SENDERS: Readonly<Record<SenderName, SenderPreset>> = {
  github,
  stripe,
  slack,
  'standard-webhooks': standardWebhooks,
  gitlab,
  alertmanager,
  linear,
  sentry,
  shopify,
  twilio,
};

/** The sender presets, in catalogue order (their setup steps and samples are for a setup command). */
export function senderPresets(): readonly SenderPreset[] {
  return Object.values(SENDERS);
}

/** The built-in presets that are on: those named in `hooks.presets`, and `gmail` whenever `hooks.gmail.account` is set. */
export function activePresets(hooks: Pick<HooksConfig, 'presets' | 'gmail'>): PresetName[] {
  const named = hooks.presets.filter((p): p is PresetName => typeof p === 'string');
  return [...new Set<PresetName>([...named, ...(hooks.gmail.account ? (['gmail'] as const) : [])])];
}

/** The sender preset entries of `hooks.presets`, in order. */
export function senderEntries(hooks: Pick<HooksConfig, 'presets'>): SenderPresetConfig[] {
  return hooks.presets.filter((p): p is SenderPresetConfig => typeof p !== 'string');
}

export interface PresetMapping {
  /** The preset: `gmail`, or the sender's name. */
  readonly name: PresetName | SenderName;
  /** As a mapping (its id, path, action, signature and limits); a sender's templates are compiled from `sender`. */
  readonly mapping: MappingConfig;
  readonly sender?: { readonly preset: SenderPreset; readonly entry: SenderPresetConfig };
}

/** The preset mappings that are on, in order (the built-in ones, then the senders), without duplicates. */
export function presetMappings(hooks: HooksConfig): PresetMapping[] {
  const out: PresetMapping[] = activePresets(hooks).map((name) => ({ name, mapping: PRESETS[name].mapping(hooks) }));
  for (const entry of senderEntries(hooks)) {
    const preset = SENDERS[entry.use];
    out.push({ name: entry.use, mapping: senderMapping(preset, entry), sender: { preset, entry } });
  }
  return out;
}

/** Every mapping of the config in the order the router tries them: `hooks.mappings`, then the presets. */
export function allMappings(hooks: HooksConfig): MappingConfig[] {
  return [...hooks.mappings, ...presetMappings(hooks).map((p) => p.mapping)];
}

/** Per-path body limits above `hooks.maxBodyBytes` that the presets turned on in `hooks.presets` need. */
export function presetBodyLimits(hooks: HooksConfig): Map<string, number> {
  const limits = new Map<string, number>();
  for (const name of activePresets(hooks)) {
    const preset = PRESETS[name];
    const allowance = preset.bodyAllowance?.(hooks);
    if (allowance !== undefined && allowance > hooks.maxBodyBytes) limits.set(preset.path, allowance);
  }
  return limits;
}

/** A built-in preset's own session key for one payload (see `Preset.sessionKeyFor`), or undefined to keep the rendered one. */
export function presetSessionKey(
  preset: PresetName | SenderName,
  payload: Record<string, unknown>,
): string | undefined {
  return Object.hasOwn(PRESETS, preset) ? PRESETS[preset as PresetName].sessionKeyFor?.(payload) : undefined;
}

/** The content source of a request a preset's sender makes (see `Preset.content`), else `webhook`. */
export function presetContentSource(
  preset: PresetName | SenderName | undefined,
  subPath: string,
  payload: Record<string, unknown>,
): ContentSource {
  const payloadSource = Object.hasOwn(payload, 'source') ? payload.source : undefined;
  for (const p of Object.values(PRESETS)) {
    if (p.content && (preset === p.name || subPath === p.path || payloadSource === p.content.payloadSource))
      return p.content.source;
  }
  return 'webhook';
}
