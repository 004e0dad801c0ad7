/** `hookgate init` keeps the config it writes (it holds the hook token) out of git when it lands in a work tree. */
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, realpathSync } from 'node:fs';
import { basename, dirname, join, relative, sep } from 'node:path';

export type IgnoreResult = { gitignore: string; added: boolean } | undefined;

function git(args: string[], cwd: string): { ok: boolean; out: string } {
  const r = spawnSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return { ok: r.status === 0, out: (r.stdout ?? '').trim() };
}

/**
 * Adds `/<path of file>` to the work tree's top-level .gitignore, unless git ignores the file already (by any rule,
 * so a second `init` adds nothing). Undefined when the file is not inside a git work tree or git is not installed.
 */
export function ignoreInGit(file: string): IgnoreResult {
  const dir = realpathSync(dirname(file));
  const top = git(['rev-parse', '--show-toplevel'], dir);
  if (!top.ok || !top.out) return undefined;
  const gitignore = join(top.out, '.gitignore');
  if (git(['check-ignore', '-q', '--', basename(file)], dir).ok) return { gitignore, added: false };
  // Escaped so a name with glob or comment characters matches only itself.
  const line = `/${relative(top.out, join(dir, basename(file))).split(sep).join('/').replace(/[*?[\\]/g, '\\$&').replace(/^\/([#!])/, '/\\$1')}`;
  const existing = existsSync(gitignore) ? readFileSync(gitignore, 'utf8') : '';
  if (existing.split(/\r?\n/).includes(line)) return { gitignore, added: false };
  const sepLine = existing !== '' && !existing.endsWith('\n') ? '\n' : '';
  appendFileSync(gitignore, `${sepLine}# hookgate config: holds the hook token and other secrets\n${line}\n`);
  return { gitignore, added: true };
}
