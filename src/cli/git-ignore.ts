/**
 * `hookgate init` keeps a file it writes with secrets in it out of git when it lands in a work tree. It writes the
 * clone's own exclude list (`.git/info/exclude`), never the tracked `.gitignore`: editing that would leave the
 * checkout dirty and make the next `git pull` conflict.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, realpathSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';

export type IgnoreResult = { excludeFile: string; added: boolean } | undefined;

function git(args: string[], cwd: string): { ok: boolean; out: string } {
  const r = spawnSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return { ok: r.status === 0, out: (r.stdout ?? '').trim() };
}

/**
 * Adds `/<path of file>` to the repository's `info/exclude`, unless git ignores the file already (by any rule, so a
 * second `init` adds nothing). Undefined when the file is not inside a git work tree or git is not installed.
 */
export function ignoreInGit(file: string): IgnoreResult {
  const dir = realpathSync(dirname(file));
  const top = git(['rev-parse', '--show-toplevel'], dir);
  if (!top.ok || !top.out) return undefined;
  const where = git(['rev-parse', '--git-path', 'info/exclude'], dir);
  if (!where.ok || !where.out) return undefined;
  const excludeFile = resolve(dir, where.out);
  if (git(['check-ignore', '-q', '--', basename(file)], dir).ok) return { excludeFile, added: false };
  // Escaped so a name with glob or comment characters matches only itself.
  const line = `/${relative(top.out, join(dir, basename(file))).split(sep).join('/').replace(/[*?[\\]/g, '\\$&').replace(/^\/([#!])/, '/\\$1')}`;
  const existing = existsSync(excludeFile) ? readFileSync(excludeFile, 'utf8') : '';
  if (existing.split(/\r?\n/).includes(line)) return { excludeFile, added: false };
  const sepLine = existing !== '' && !existing.endsWith('\n') ? '\n' : '';
  mkdirSync(dirname(excludeFile), { recursive: true });
  appendFileSync(excludeFile, `${sepLine}# hookgate: holds secrets (written by hookgate init)\n${line}\n`);
  return { excludeFile, added: true };
}
