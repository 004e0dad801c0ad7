/**
 * Path containment: the one place that decides whether a configured path stays inside the directory it must stay
 * in, lexically and after resolving symlinks. Used when the config loads (config/transform-paths.ts), when a
 * generation's transforms are compiled (hooks/mappings) and when channel plugins are loaded (channels/registry), so
 * every path loaded from disk obeys the same rules.
 */
import { lstatSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../errors.js';

/**
 * Accepted transform module extensions. `.mjs`/`.js`/`.cjs` are imported natively; `.ts`/`.mts` go through tsx.
 * (`.cts`/`.tsx` are left out: nothing about a transform needs them, and every extra format is one more loader path
 * to keep right.)
 */
export const TRANSFORM_EXTENSIONS: readonly string[] = ['.mjs', '.js', '.cjs', '.ts', '.mts'];

/** `child` is `root` or below it (both absolute, normalised). */
export function isInside(root: string, child: string): boolean {
  const rel = path.relative(root, child);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

/**
 * realpath of `p` even when `p` (or some of its tail) does not exist yet: the realpath of the nearest existing
 * ancestor plus the missing tail. A dangling symlink on the way is refused (returns undefined): where it points is
 * exactly what we cannot check, and creating the directory later would follow it.
 */
export function realpathOfNearest(p: string): string | undefined {
  const tail: string[] = [];
  let cur = path.resolve(p);
  for (;;) {
    try {
      return path.join(realpathSync(cur), ...tail);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return undefined;
      try {
        lstatSync(cur);
        return undefined; // exists as a link, but its target does not: dangling symlink
      } catch {
        // really missing: go up one level
      }
      const parent = path.dirname(cur);
      if (parent === cur) return undefined;
      tail.unshift(path.basename(cur));
      cur = parent;
    }
  }
}

/** Where `p` points when it is a symbolic link; undefined when it is anything else or does not exist. */
function symlinkTarget(p: string): string | undefined {
  try {
    return lstatSync(p).isSymbolicLink() ? readlinkSync(p) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The directory transform modules are loaded from: `<configDir>/hooks/transforms`, or `transformsDir` (relative to
 * `configDir`, or absolute) if it lies inside that root — both as written and after resolving symlinks. The root
 * (and its `hooks` parent) must not be symlinks. The directory need not exist yet. Throws a ConfigError at `hooks.transformsDir`.
 */
export function resolveTransformsDir(configDir: string, transformsDir?: string): string {
  const root = path.resolve(configDir, 'hooks', 'transforms');
  const raw = transformsDir?.trim();
  const target = raw ? path.resolve(configDir, raw) : root;
  const issue = (message: string) => new ConfigError([{ path: 'hooks.transformsDir', message }]);
  if (raw?.includes('\0')) throw issue('must not contain NUL characters');
  if (!isInside(root, target)) throw issue(`must be within ${root} (resolves to ${target})`);
  // The root itself must not be a link either: transforms are code the service runs, and a link would let whoever
  // can replace it (or what it points to) choose that code from outside the config dir. An operator who keeps
  // transforms elsewhere moves them into the root instead; links below the root are checked per module.
  for (const dir of [path.dirname(root), root]) {
    const link = symlinkTarget(dir);
    if (link !== undefined)
      throw issue(
        `${dir} is a symlink (to ${link}); the transforms root must be a real directory: move the transforms into it`,
      );
  }
  const realRoot = realpathOfNearest(root);
  const realTarget = realpathOfNearest(target);
  if (realRoot === undefined || realTarget === undefined)
    throw issue(`cannot be resolved (a dangling symlink or an unreadable directory on the way to ${target})`);
  if (!isInside(realRoot, realTarget))
    throw issue(`must be within ${root}; ${target} leaves it through a symlink (to ${realTarget})`);
  return target;
}

/**
 * Validates `module` (as written in the config) and resolves it inside `dir`. Returns the module's real path (the
 * file that will be imported). Throws a ConfigError at `keyPathForErrors`, e.g. `hooks.mappings[2].transform.module`.
 */
export function resolveTransformModule(dir: string, module: string, keyPathForErrors: string): string {
  const issue = (message: string) => new ConfigError([{ path: keyPathForErrors, message }]);
  if (typeof module !== 'string' || module.trim() === '') throw issue('must be a non-empty relative path');
  if (module.includes('\0')) throw issue('must not contain NUL characters');
  if (path.posix.isAbsolute(module) || path.win32.isAbsolute(module))
    throw issue('must be a relative path inside the transforms directory, not an absolute path');
  if (module.startsWith('~')) throw issue('must not start with "~" (home directories are not expanded)');
  // Blocks `file:`/`data:`/`node:` URLs and Windows drive-relative forms like `C:foo.mjs`.
  if (module.includes(':')) throw issue('must not contain ":" (URLs and drive letters are not allowed)');
  if (module.split(/[\\/]/).includes('..')) throw issue('must not contain ".." segments');
  const ext = path.extname(module);
  if (!TRANSFORM_EXTENSIONS.includes(ext)) throw issue(`must end in one of ${TRANSFORM_EXTENSIONS.join(', ')}`);

  const base = path.resolve(dir);
  const full = path.resolve(base, module);
  if (!isInside(base, full)) throw issue(`must be within the transforms directory ${base}`);

  let realDir: string;
  try {
    realDir = realpathSync(base);
  } catch {
    throw issue(`transforms directory ${base} does not exist`);
  }
  let realFile: string;
  try {
    realFile = realpathSync(full);
  } catch {
    throw issue(`transform module ${full} does not exist`);
  }
  // An in-root symlink (e.g. `current.mjs -> v2/transform.mjs`) is fine; one that leaves the root is not.
  if (!isInside(realDir, realFile))
    throw issue(`must be within the transforms directory ${base}; ${module} leaves it through a symlink`);
  if (!statSync(realFile).isFile()) throw issue(`transform module ${full} is not a file`);
  if (!TRANSFORM_EXTENSIONS.includes(path.extname(realFile)))
    throw issue(`symlink target of ${module} must end in one of ${TRANSFORM_EXTENSIONS.join(', ')}`);
  return realFile;
}
