import type { RawConfig } from './schema/index.js';
import { ECHO_PROVIDER_ID } from './schema/models.js';

export interface ResolvedModel {
  /** Canonical `<provider>/<model>`. */
  ref: string;
  providerId: string;
  model: string;
}

export type ModelResolution = { ok: true; model: ResolvedModel } | { ok: false; reason: string };

/**
 * Which model refs exist (provider configured, model listed when the provider lists models),
 * which aliases map to them, and which are allowed (`agents.defaults.models`).
 */
export class ModelCatalog {
  private readonly aliases = new Map<string, string>();
  private readonly allowlist: Set<string> | undefined;
  private readonly providers: RawConfig['models']['providers'];

  constructor(config: Pick<RawConfig, 'agents' | 'models'>) {
    this.providers = config.models.providers;
    const allowed = config.agents.defaults.models;
    if (Array.isArray(allowed)) {
      this.allowlist = new Set(allowed);
    } else if (allowed) {
      this.allowlist = new Set(Object.keys(allowed));
      for (const [ref, opts] of Object.entries(allowed)) if (opts.alias) this.aliases.set(opts.alias, ref);
    }
  }

  /** Resolves an alias or `<provider>/<model>`; does not check the allowlist. */
  resolve(refOrAlias: string): ModelResolution {
    const input = refOrAlias.trim();
    const ref = this.aliases.get(input) ?? input;
    const slash = ref.indexOf('/');
    if (slash <= 0 || slash === ref.length - 1) {
      return { ok: false, reason: `model "${input}" is neither <provider>/<model> nor a configured alias` };
    }
    const providerId = ref.slice(0, slash);
    const model = ref.slice(slash + 1);
    const provider = this.providers[providerId];
    if (!provider && providerId !== ECHO_PROVIDER_ID) {
      const known = [ECHO_PROVIDER_ID, ...Object.keys(this.providers)].join(', ');
      return { ok: false, reason: `model "${input}": unknown provider "${providerId}" (configured: ${known})` };
    }
    if (provider?.models && !provider.models.includes(model)) {
      return {
        ok: false,
        reason: `model "${input}": provider "${providerId}" lists only ${provider.models.join(', ')}`,
      };
    }
    return { ok: true, model: { ref, providerId, model } };
  }

  isAllowed(ref: string): boolean {
    return this.allowlist === undefined || this.allowlist.has(ref);
  }

  /** Resolve and check the allowlist in one step: what a request's `model` override needs. */
  resolveAllowed(refOrAlias: string): ModelResolution {
    const r = this.resolve(refOrAlias);
    if (r.ok && !this.isAllowed(r.model.ref)) {
      return {
        ok: false,
        reason: `model "${refOrAlias}" is not in agents.defaults.models (allowed: ${[...this.allowlist!].join(', ')})`,
      };
    }
    return r;
  }
}
