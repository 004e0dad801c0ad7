/**
 * `application/x-www-form-urlencoded` bodies, decoded one way for everyone who reads them: the ingress (a signed
 * mapping's payload: `parseFormObject`), `hookgate mappings test` and `send hook --form`, and the signature schemes
 * that sign the decoded fields (Twilio, hooks/mappings/signature-twilio.ts).
 */

/** `application/x-www-form-urlencoded`, with or without parameters (`; charset=utf-8`), in any letter case. */
export function isFormContentType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const semi = contentType.indexOf(';');
  return (
    (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase() === 'application/x-www-form-urlencoded'
  );
}

/**
 * A form body's fields as sent: `[name, value]` pairs in order, decoded as UTF-8 (`+` is a space, `%XX` a byte; an
 * invalid escape stays as written), repeated names kept. A UTF-8 BOM before the first field is skipped. Never throws.
 */
export function formFields(body: Buffer): Array<[string, string]> {
  const start = body.length >= 3 && body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? 3 : 0;
  return [...new URLSearchParams(body.toString('utf8', start))];
}

/** Field names that are never copied from a form: they could reach an object's prototype. */
const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(['__proto__', 'prototype', 'constructor']);

/**
 * A form body (`a=1&b=x+y`, UTF-8) as a payload: one string per field; a field sent more than once becomes an array
 * of its values in order (Slack never repeats one); `__proto__`/`prototype`/`constructor` fields are dropped. A
 * `payload` field holding a JSON object or array (Slack Interactivity) is decoded into that value; any other
 * `payload` stays a string. A BOM is skipped as for JSON. Never throws.
 */
export function parseFormObject(body: Buffer): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of formFields(body)) {
    if (PROTOTYPE_KEYS.has(name)) continue;
    if (!Object.hasOwn(out, name)) out[name] = value;
    else {
      const prev = out[name];
      out[name] = Array.isArray(prev) ? [...(prev as string[]), value] : [prev, value];
    }
  }
  if (typeof out.payload === 'string') {
    const text = out.payload.trim();
    if (text.startsWith('{') || text.startsWith('[')) {
      try {
        const decoded = JSON.parse(text) as unknown;
        if (decoded !== null && typeof decoded === 'object') out.payload = decoded;
      } catch {
        // not JSON after all: kept as the string that was sent
      }
    }
  }
  return out;
}
