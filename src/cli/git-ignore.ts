/**
 * `hookgate init` keeps a file it writes with secrets in it out of git when it lands in a work tree. It writes the
 * clone's own exclude list (`.git/info/exclude`), never the tracked `.gitignore`: editing that would leave the
 * checkout dirty and make the next `git pull` conflict.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';

export type IgnoreResult = { excludeFile: string; added: boolean } | undefined;

function git(args: string[], cwd: string): { ok: boolean; out: string } {
  const r = spawnSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return { ok: r.status === 0, out: (r.stdout ?? '').trim() };
}

/**
 * Adds `/<path>` (`/<path>/` for a directory) of each path to the repository's `info/exclude`, unless git ignores
 * it already (by any rule, so a second `init` adds nothing). Undefined when the file is not inside a git work tree or git is not installed.
 */
export function ignoreInGit(...paths: string[]): IgnoreResult {
  const first = paths[0];
  if (first === undefined) return undefined;
  const dir = realpathSync(dirname(first));
  const top = git(['rev-parse', '--show-toplevel'], dir);
  if (!top.ok || !top.out) return undefined;
  const where = git(['rev-parse', '--git-path', 'info/exclude'], dir);
  if (!where.ok || !where.out) return undefined;
  const excludeFile = resolve(dir, where.out);
  const existing = existsSync(excludeFile) ? readFileSync(excludeFile, 'utf8') : '';
  const have = new Set(existing.split(/\r?\n/));
  const lines: string[] = [];
  for (const path of paths) {
    const isDir = existsSync(path) && statSync(path).isDirectory();
    const at = join(realpathSync(dirname(path)), basename(path));
    if (git(['check-ignore', '-q', '--', at], dir).ok) continue;
    // Escaped so a name with glob or comment characters matches only itself.
    const rel = relative(top.out, at)
      .split(sep)
      .join('/')
      .replace(/[*?[\\]/g, '\\$&');
    const line = `/${rel}${isDir ? '/' : ''}`.replace(/^\/([#!])/, '/\\$1');
    if (!have.has(line)) lines.push(line);
  }
  if (!lines.length) return { excludeFile, added: false };
  const sepLine = existing !== '' && !existing.endsWith('\n') ? '\n' : '';
  mkdirSync(dirname(excludeFile), { recursive: true });
  appendFileSync(excludeFile, `${sepLine}# hookgate: holds secrets (written by hookgate init)\n${lines.join('\n')}\n`);
  return { excludeFile, added: true };
}
