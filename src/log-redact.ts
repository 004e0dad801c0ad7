/**
 * The logger's redaction: the values of `token`, `authorization`, `apiKey`, `secret` and `password` never reach a log
 * line, whether they are fields of the line (or of a child logger's bindings) or fields of an object one level down.
 *
 * It means what pino's `redact.paths` ['token', '*.token', …] meant, line for line (the property test in
 * test/log-redact.test.ts keeps that configuration as its oracle), but it costs a few property checks when no such key
 * is present, where pino's path walker cloned and re-serialised every field of every line. Nothing here mutates the
 * caller's objects: where a value must be replaced, the line (or the object holding the key) is copied.
 */

export const CENSOR = '[redacted]';

const hasOwn = Object.prototype.hasOwnProperty;
const isEnumerable = Object.prototype.propertyIsEnumerable;

/** A field named `__proto__` stays a field: an assignment would set the copy's prototype and lose the field. */
function setField(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

function isRedactedKey(key: string): boolean {
  return key === 'token' || key === 'authorization' || key === 'apiKey' || key === 'secret' || key === 'password';
}

/** An object that is copied field by field when serialised: arrays and dates are not descended into. */
function isPlainish(v: unknown): v is object {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
}

/** An own enumerable redacted key (whatever its value, `undefined` included): what a field-by-field copy would hold. */
function holdsRedactedKey(v: object): boolean {
  return (
    isEnumerable.call(v, 'token') ||
    isEnumerable.call(v, 'authorization') ||
    isEnumerable.call(v, 'apiKey') ||
    isEnumerable.call(v, 'secret') ||
    isEnumerable.call(v, 'password')
  );
}

/**
 * `v` with its own redacted keys' values replaced (one level: `*.token`). The copy keeps `v`'s prototype so that
 * JSON.stringify sees what it would have seen (a `toJSON`, an error's prototype): the same copy pino's redaction made.
 */
export function redactFields(v: unknown): unknown {
  if (!isPlainish(v) || !holdsRedactedKey(v)) return v;
  const copy = Object.create(Object.getPrototypeOf(v)) as Record<string, unknown>;
  const src = v as Record<string, unknown>;
  for (const key in src) if (hasOwn.call(src, key)) setField(copy, key, isRedactedKey(key) ? CENSOR : src[key]);
  return copy;
}

/**
 * The fields of a line or of a child logger's bindings. A redacted key at the top is replaced unless pino would leave
 * it out anyway: `undefined`, and on a line (not in bindings) a function. `err` is left to the error serializer
 * (`redactError`), which sees the plain object an Error becomes. Returns `fields` itself when nothing is replaced.
 */
export function redactTop(fields: Record<string, unknown>, bindings: boolean): Record<string, unknown> {
  for (const key in fields) {
    if (!hasOwn.call(fields, key)) continue;
    const v = fields[key];
    if (
      isRedactedKey(key)
        ? v !== undefined && (bindings || typeof v !== 'function')
        : key !== 'err' && isPlainish(v) && holdsRedactedKey(v)
    )
      return copyTop(fields, bindings);
  }
  return fields;
}

function copyTop(fields: Record<string, unknown>, bindings: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key in fields) {
    if (!hasOwn.call(fields, key)) continue;
    const v = fields[key];
    let value: unknown;
    if (isRedactedKey(key)) value = v === undefined || (!bindings && typeof v === 'function') ? v : CENSOR;
    else value = key === 'err' ? v : redactFields(v);
    setField(out, key, value);
  }
  return out;
}

/** `*.token` on an argument the message is formatted with (`%j`, `%o`): the argument's own fields and one level below. */
function redactFormatArg(v: unknown): unknown {
  if (typeof v !== 'object' || v === null || v instanceof Date) return v;
  if (Array.isArray(v)) return v.some((e) => isPlainish(e) && holdsRedactedKey(e)) ? v.map(redactFields) : v;
  const src = v as Record<string, unknown>;
  let found = holdsRedactedKey(src);
  if (!found)
    for (const key in src)
      if (hasOwn.call(src, key) && isPlainish(src[key]) && holdsRedactedKey(src[key] as object)) found = true;
  if (!found) return v;
  const copy = Object.create(Object.getPrototypeOf(v)) as Record<string, unknown>;
  for (const key in src)
    if (hasOwn.call(src, key)) setField(copy, key, isRedactedKey(key) ? CENSOR : redactFields(src[key]));
  return copy;
}

/**
 * A log call's arguments after its object: the message and what it is formatted with. Rewrites `args` in place (the
 * array is pino's own). pino's redaction applied `*.token` to the arguments a message is formatted with, and to a
 * message that is an object; nothing in hookgate logs either, but the meaning is kept.
 */
export function redactMessageArgs(args: unknown[]): void {
  // Where the message is: pino's log methods take (obj, msg, ...params) or (msg, ...params).
  const at = typeof args[0] === 'object' || args[0] === undefined ? 1 : 0;
  const msg = args[at];
  const params = args.length - at - 1;
  if (typeof msg === 'object' && msg !== null) args[at] = params > 0 ? redactFormatArg(msg) : redactFields(msg);
  for (let i = at + 1; i < args.length; i++) if (typeof args[i] === 'object') args[i] = redactFormatArg(args[i]);
}
