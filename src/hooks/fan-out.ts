/**
 * `forEach` fan-out of a mapping: one action per item of a top-level payload array (the gmail preset fans out over
 * `messages`). Each item is rendered (and transformed) against the payload with the array narrowed to a one-element
 * array holding that item, so the templates written for the first element (`{{messages[0].id}}`) address the current
 * item.
 */

export interface FanOut {
  /** One payload per item kept: the original payload with `key` replaced by `[item]`. */
  payloads: Array<Record<string, unknown>>;
  /** Items beyond the cap, not dispatched. */
  dropped: number;
}

/**
 * Splits `payload[key]` into per-item payloads, at most `cap` of them. A missing, non-array or empty value yields no
 * payloads (the request is answered 204). Only an own property counts (`key` is validated as a plain identifier by
 * the config schema, and never a prototype key).
 */
export function fanOutPayloads(payload: Record<string, unknown>, key: string, cap: number): FanOut {
  const list = Object.hasOwn(payload, key) ? payload[key] : undefined;
  if (!Array.isArray(list) || list.length === 0) return { payloads: [], dropped: 0 };
  const kept = Math.min(list.length, Math.max(0, Math.floor(cap)));
  const payloads: Array<Record<string, unknown>> = new Array(kept);
  for (let i = 0; i < kept; i++) payloads[i] = { ...payload, [key]: [list[i]] };
  return { payloads, dropped: list.length - kept };
}
