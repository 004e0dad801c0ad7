/**
 * The worked examples of a doc page (docs/mappings.md): each fenced block marked by an HTML comment
 * `<!-- example <name>: <kind> [arg] -->` right above it, read into its example (the kinds: test/e2e/docs-mappings.test.ts,
 * which runs them). Tests that start a server on an example's config read it here, so the doc stays the one copy.
 */
import JSON5 from 'json5';

export type Step =
  | { kind: 'request'; text: string }
  | { kind: 'response'; text: string }
  | { kind: 'run' | 'runs'; text: string }
  | { kind: 'event'; text: string };

export interface Example {
  name: string;
  env: Record<string, string>;
  config: Record<string, unknown> | undefined;
  files: Array<{ path: string; text: string }>;
  steps: Step[];
}

/** Every `<!-- example name: kind [arg] -->` followed by a fenced block, in document order. */
export function parseExamples(markdown: string): Example[] {
  const re = /<!-- example ([\w-]+): (\w+)(?: ([^\s>]+))? -->\s*\n```[\w-]*\n([\s\S]*?)\n```/g;
  const byName = new Map<string, Example>();
  for (const m of markdown.matchAll(re)) {
    const [, name, kind, arg, text] = m as unknown as [string, string, string, string | undefined, string];
    let ex = byName.get(name);
    if (!ex) byName.set(name, (ex = { name, env: {}, config: undefined, files: [], steps: [] }));
    switch (kind) {
      case 'env':
        for (const line of text.split('\n')) {
          const e = /^export ([A-Z_][A-Z0-9_]*)=(?:"([^"]*)"|'([^']*)'|(\S*))$/.exec(line.trim());
          if (e) ex.env[e[1]!] = e[2] ?? e[3] ?? e[4] ?? '';
          else if (line.trim()) throw new Error(`example ${name}: cannot read env line ${JSON.stringify(line)}`);
        }
        break;
      case 'config':
        ex.config = JSON5.parse(text) as Record<string, unknown>;
        break;
      case 'file':
        if (!arg) throw new Error(`example ${name}: file needs a path`);
        ex.files.push({ path: arg, text: `${text}\n` });
        break;
      case 'request':
      case 'response':
      case 'run':
      case 'runs':
      case 'event':
        ex.steps.push({ kind, text } as Step);
        break;
      default:
        throw new Error(`example ${name}: unknown block kind ${kind}`);
    }
  }
  return [...byName.values()];
}
