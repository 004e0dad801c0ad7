import { type FSWatcher, watch } from 'node:fs';

/** Changes this close together are taken as one: editors write a file in several steps. */
const SETTLE_MS = 150;

/**
 * Calls `onChange` after the config file changed. The file itself is watched, not its directory: a store beside the
 * config file would otherwise wake the process on every commit (its journal's writes are the directory's events).
 * Editors that replace the file (write a new one, rename it over the old), and symlink swaps such as a Kubernetes
 * ConfigMap's, leave the watch on an inode the path no longer names: so after each change settles, the path is
 * watched anew before `onChange` runs, and while it names nothing (a save that removes first) it is tried again
 * every 150 ms. Returns the function that stops watching.
 */
export function watchConfigFile(file: string, onChange: () => void): () => void {
  let watcher: FSWatcher | undefined;
  let timer: NodeJS.Timeout | undefined;
  const changed = () => {
    clearTimeout(timer);
    timer = setTimeout(settled, SETTLE_MS);
  };
  const arm = (): boolean => {
    watcher?.close();
    watcher = undefined;
    try {
      watcher = watch(file, changed);
    } catch {
      return false; // the path names nothing at the moment
    }
    watcher.on('error', changed); // a watch the platform ended: watch the path again
    watcher.unref();
    return true;
  };
  const settled = () => {
    if (arm()) onChange();
    else timer = setTimeout(settled, SETTLE_MS);
  };
  if (!arm()) timer = setTimeout(settled, SETTLE_MS);
  return () => {
    clearTimeout(timer);
    watcher?.close();
  };
}
