/**
 * The one piece of template syntax the config itself must know: whether a value is templated (`{{ … }}`) or static.
 * Config checks branch on it (a templated channel or model is checked per request, not at load); the compiler lives
 * in hooks and imports this.
 */

/** True when `s` contains at least one `{{ … }}` expression (a "templated" rather than "static" value). */
export function isTemplated(s: string): boolean {
  return /\{\{[^}]*\}\}/.test(s);
}
