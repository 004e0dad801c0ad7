/**
 * The words the runtime writes into prompts and looks for in replies, shared with the providers that imitate an
 * agent (the `echo` provider): the external-content boundary markers and the heartbeat acknowledgement token.
 * A leaf module (providers sit below the runtime and must not import it). Constants and pure string builders only.
 */

/** The reply that means "nothing worth telling the user" (see runtime/heartbeat-ack.ts). */
export const HEARTBEAT_TOKEN = 'HEARTBEAT_OK';

/** The word of the opening boundary marker around external (untrusted) content. */
export const EXTERNAL_CONTENT_WORD = 'EXTERNAL_UNTRUSTED_CONTENT';
/** The word of the closing boundary marker. */
export const END_EXTERNAL_CONTENT_WORD = `END_${EXTERNAL_CONTENT_WORD}`;

/** Labels of the metadata lines the wrapper writes between the start marker and the `---` line. */
export const EXTERNAL_CONTENT_META_LABELS: readonly string[] = ['Source', 'From', 'Subject'];
/** The line that ends the metadata lines. */
export const EXTERNAL_CONTENT_META_END = '---';

const idAttribute = (id: string | undefined): string => (id === undefined ? '' : ` id="${id}"`);

/** The opening boundary line for a wrap id (without an id: the legacy form). */
export function startMarker(id?: string): string {
  return `<<<${EXTERNAL_CONTENT_WORD}${idAttribute(id)}>>>`;
}

/** The closing boundary line for a wrap id (without an id: the legacy form). */
export function endMarker(id?: string): string {
  return `<<<${END_EXTERNAL_CONTENT_WORD}${idAttribute(id)}>>>`;
}
