import type { ConfigIssue } from '../../errors.js';
import type { RawConfig } from '../schema/index.js';

/** What one section's cross-key rules found: problems (the config must not start) and warnings (it may). */
export interface ConfigFindings {
  issues: ConfigIssue[];
  warnings: string[];
}

/** One section's rules. Pure: no file system. */
export type SectionCheck = (config: RawConfig) => ConfigFindings;
