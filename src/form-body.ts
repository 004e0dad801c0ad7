/**
 * `application/x-www-form-urlencoded` bodies, decoded one way for everyone who reads them: the ingress (a signed
 * mapping's payload, ingress/body.ts `parseFormObject`) and the signature schemes that sign the decoded fields
 * (Twilio, hooks/mappings/signature-twilio.ts).
 */

/** `application/x-www-form-urlencoded`, with or without parameters (`; charset=utf-8`), in any letter case. */
export function isFormContentType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const semi = contentType.indexOf(';');
  return (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase() === 'application/x-www-form-urlencoded';
}

/**
 * A form body's fields as sent: `[name, value]` pairs in order, decoded as UTF-8 (`+` is a space, `%XX` a byte; an
 * invalid escape stays as written), repeated names kept. A UTF-8 BOM before the first field is skipped. Never throws.
 */
export function formFields(body: Buffer): Array<[string, string]> {
  const start = body.length >= 3 && body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? 3 : 0;
  return [...new URLSearchParams(body.toString('utf8', start))];
}
