/**
 * The syntax of `{{ expr }}` templates, on its own so the config can tell a templated value from a static one without
 * depending on the template compiler (hooks/mappings/templates.ts), which uses the same expression pattern.
 */

/** Same shape as OpenClaw's templates: double braces around anything but `}`; group 1 is the expression. */
export const TEMPLATE_EXPRESSION = /\{\{([^}]*)\}\}/g;

// Not global: `.test` on a global regex would carry `lastIndex` between calls.
const ANY_EXPRESSION = new RegExp(TEMPLATE_EXPRESSION.source);

/** True when `s` contains at least one `{{ … }}` expression (a "templated" rather than "static" value). */
export function isTemplated(s: string): boolean {
  return ANY_EXPRESSION.test(s);
}
