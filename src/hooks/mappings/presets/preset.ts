/**
 * What a built-in mapping (`hooks.presets`) is: a mapping built from the config, plus what its sender needs beyond a
 * mapping (a larger body, the kind of content it delivers). Each preset is one file in this folder.
 */
import type { HooksConfig, MappingConfig, PRESETS } from '../../../config/schema/hooks.js';
import type { ContentSource } from '../../../store/types.js';

export type PresetName = (typeof PRESETS)[number];

/** Upper bound of any per-path body allowance: 32 MiB. */
export const MAX_PATH_BODY_BYTES = 32 * 1024 * 1024;

export interface Preset {
  readonly name: PresetName;
  /** The sub-path the preset's mapping matches (`match.path`). */
  readonly path: string;
  /** The preset as a mapping, with the preset's own settings applied. */
  mapping(hooks: HooksConfig): MappingConfig;
  /**
   * A session key that replaces the rendered `sessionKey` for one payload (one item of a fan-out), when the
   * mapping's template cannot tell that item apart; undefined keeps the rendered key.
   */
  sessionKeyFor?(payload: Record<string, unknown>): string | undefined;
  /** The body limit of `path` while the preset is on, when its sender needs more than `hooks.maxBodyBytes`. */
  bodyAllowance?(hooks: HooksConfig): number;
  /**
   * What the sender delivers, recorded as the run's content source. Applies whether or not the preset is on: to the
   * preset's mapping, to any mapping on its `path`, and to a payload whose `source` is `payloadSource`.
   */
  readonly content?: { source: ContentSource; payloadSource: string };
}
