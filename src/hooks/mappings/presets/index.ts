/**
 * Built-in mappings (`hooks.presets`). They are appended after the custom `hooks.mappings`, so a mapping of yours
 * with the same `match.path` comes first and wins. Only `gmail` exists.
 */
import type { HooksConfig, MappingConfig } from '../../../config/schema/hooks.js';
import type { ContentSource } from '../../../store/types.js';
import { gmail } from './gmail.js';
import type { Preset, PresetName } from './preset.js';

export type { PresetName } from './preset.js';

const PRESETS: Readonly<Record<PresetName, Preset>> = { gmail };

/** The presets that are on: those named in `hooks.presets`, and `gmail` whenever `hooks.gmail.account` is set. */
export function activePresets(hooks: Pick<HooksConfig, 'presets' | 'gmail'>): PresetName[] {
  return [...new Set<PresetName>([...hooks.presets, ...(hooks.gmail.account ? (['gmail'] as const) : [])])];
}

/** The preset mappings that are on (`activePresets`), in order, without duplicates. */
export function presetMappings(hooks: HooksConfig): Array<{ name: PresetName; mapping: MappingConfig }> {
  return activePresets(hooks).map((name) => ({ name, mapping: PRESETS[name].mapping(hooks) }));
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

/** A preset's own session key for one payload (see `Preset.sessionKeyFor`), or undefined to keep the rendered one. */
export function presetSessionKey(preset: PresetName, payload: Record<string, unknown>): string | undefined {
  return PRESETS[preset].sessionKeyFor?.(payload);
}

/** The content source of a request a preset's sender makes (see `Preset.content`), else `webhook`. */
export function presetContentSource(preset: PresetName | undefined, subPath: string, payload: Record<string, unknown>): ContentSource {
  const payloadSource = Object.hasOwn(payload, 'source') ? payload.source : undefined;
  for (const p of Object.values(PRESETS)) {
    if (p.content && (preset === p.name || subPath === p.path || payloadSource === p.content.payloadSource)) return p.content.source;
  }
  return 'webhook';
}
