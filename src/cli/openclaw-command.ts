/**
 * `hookgate import openclaw [PATH]`: reads an OpenClaw config (JSON5), writes a commented hookgate.json5 (or prints
 * it), copies the transform modules next to it, checks the result as `config check` does and ends with the report
 * of every key: copied, converted or dropped. Exit 1 when the result does not pass the check.
 */
import { chmodSync, cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import JSON5 from 'json5';
import { type Config, parseConfig } from '../config/load.js';
import { CliError, ConfigError } from '../errors.js';
import { firstLine, logSafe } from '../text-safe.js';
import { ignoreInGit } from './git-ignore.js';
import { type Converted, convertOpenClaw } from './openclaw-import.js';

export function addImportCommand(program: Command): void {
  program
    .command('import')
    .description("turn another gateway's config into a hookgate config")
    .command('openclaw')
    .description(
      "convert an OpenClaw config's hooks (and the agents, models and channels they use) into hookgate.json5, with a report of every key",
    )
    .argument('[path]', 'the OpenClaw config', join(homedir(), '.openclaw', 'openclaw.json'))
    .option('-o, --out <file>', 'the hookgate config to write', 'hookgate.json5')
    .option('--print', 'print the config instead of writing it (the report goes to stderr; transforms are not copied)')
    .option('-f, --force', 'overwrite an existing file')
    .action((path: string, opts: { out: string; print?: boolean; force?: boolean }) => importOpenClaw(path, opts));
}

function importOpenClaw(path: string, opts: { out: string; print?: boolean; force?: boolean }): void {
  const src = resolve(path);
  let input: unknown;
  try {
    input = JSON5.parse(readFileSync(src, 'utf8'));
  } catch (err) {
    throw new CliError('cli_usage', `cannot read the OpenClaw config ${src}: ${firstLine(err)}`);
  }
  const out = resolve(opts.out);
  if (!opts.print && existsSync(out) && !opts.force)
    throw new CliError('cli_usage', `${out} exists; use --force to overwrite`);
  const sameDir = dirname(src) === dirname(out);
  const converted = convertOpenClaw(input, { transforms: opts.print || sameDir ? 'point' : 'copy' });
  const hooks = converted.config.hooks;
  if (!opts.print && !sameDir && hooks) copyTransforms(dirname(src), dirname(out), hooks, converted);
  const text = renderConfig(converted, src);
  const log = (line: string) => (opts.print ? process.stderr : process.stdout).write(`${line}\n`);
  if (opts.print) process.stdout.write(text);
  else {
    writeFileSync(out, text, { mode: 0o600 });
    chmodSync(out, 0o600);
    log(`wrote ${out} (mode 0600: it may hold secrets)`);
    const ignored = ignoreInGit(out);
    if (ignored?.added) log(`added it to ${ignored.excludeFile} (it holds secrets)`);
  }
  for (const r of converted.report) log(`${r.action.padEnd(9)} ${r.key}${r.note ? `: ${r.note}` : ''}`);
  let config: Config;
  try {
    config = parseConfig(text, opts.print ? undefined : out, dirname(out));
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    log("config check: the result does not pass; fix these in the written file (or in OpenClaw's and import again):");
    for (const i of err.issues) log(`  ${i.path}: ${logSafe(i.message, 400)}`);
    process.exitCode = 1;
    return;
  }
  for (const w of config.warnings) log(`warning: ${w}`);
  log(
    `config check: ok${opts.print ? '' : `; start it with: hookgate serve --config ${relative(process.cwd(), out) || out}`}`,
  );
}

/**
 * OpenClaw resolves `transformsDir` and modules inside `<its config dir>/hooks/transforms`; hookgate inside its own
 * config dir's. The whole root is copied, so `transformsDir` and every `transform.module` keep their meaning.
 */
function copyTransforms(fromDir: string, toDir: string, hooks: Record<string, unknown>, converted: Converted): void {
  const root = join(fromDir, 'hooks', 'transforms');
  const uses =
    hooks.transformsDir !== undefined ||
    (Array.isArray(hooks.mappings) &&
      hooks.mappings.some((m) => typeof m === 'object' && m !== null && 'transform' in m));
  if (!uses || !existsSync(root)) return;
  cpSync(root, join(toDir, 'hooks', 'transforms'), { recursive: true, errorOnExist: false, force: true });
  if (typeof hooks.transformsDir === 'string' && isAbsolute(hooks.transformsDir)) {
    hooks.transformsDir = join('hooks', 'transforms', relative(root, hooks.transformsDir));
    converted.report.push({
      key: 'hooks.transformsDir',
      action: 'converted',
      note: "made relative to hooks/transforms (it was absolute, inside OpenClaw's)",
    });
  }
}

const IDENT = /^[A-Za-z_$][\w$]*$/;

/** The config as commented JSON5: `converted.comments` above their keys. */
export function renderConfig(converted: Converted, src: string): string {
  const head = [
    `// hookgate config imported from OpenClaw (${src}) by \`hookgate import openclaw\`.`,
    '// Reference: docs/config.md; what changed from OpenClaw and why: docs/openclaw.md.',
  ];
  return `${head.join('\n')}\n${render(converted.config, '', '', converted.comments)}\n`;
}

function render(v: unknown, indent: string, path: string, comments: Record<string, string>): string {
  if (Array.isArray(v)) {
    if (v.length === 0) return '[]';
    if (v.every((x) => typeof x !== 'object' || x === null)) return `[${v.map((x) => JSON.stringify(x)).join(', ')}]`;
    const inner = `${indent}  `;
    return `[\n${v.map((x) => `${inner}${render(x, inner, path, comments)},`).join('\n')}\n${indent}]`;
  }
  if (typeof v === 'object' && v !== null) {
    const entries = Object.entries(v).filter(([, x]) => x !== undefined);
    if (entries.length === 0) return '{}';
    // Small leaves on one line: { path: "ci" }, { env: "NAME" }.
    if (
      entries.length <= 3 &&
      entries.every(([k, x]) => (typeof x !== 'object' || x === null) && !comments[path ? `${path}.${k}` : k])
    ) {
      return `{ ${entries.map(([k, x]) => `${IDENT.test(k) ? k : JSON.stringify(k)}: ${JSON.stringify(x)}`).join(', ')} }`;
    }
    const inner = `${indent}  `;
    const lines = entries.map(([k, x]) => {
      const at = path ? `${path}.${k}` : k;
      const note = comments[at] ? `${inner}// ${comments[at]}\n` : '';
      return `${note}${inner}${IDENT.test(k) ? k : JSON.stringify(k)}: ${render(x, inner, at, comments)},`;
    });
    return `{\n${lines.join('\n')}\n${indent}}`;
  }
  return JSON.stringify(v);
}
