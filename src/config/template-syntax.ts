/** Whether a config string uses `{{ … }}` templates (then it is checked per request, not at load). */
export function isTemplated(s: string): boolean {
  return /\{\{[^}]*\}\}/.test(s);
}
