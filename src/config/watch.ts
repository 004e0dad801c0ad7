import { watch } from 'node:fs';
import { basename, dirname } from 'node:path';

/**
 * Calls `onChange` after the config file changed. Editors replace files (rename) or write twice: the directory is
 * watched so a replaced file is seen, and changes are debounced by 150 ms. Returns the function that stops watching.
 */
export function watchConfigFile(file: string, onChange: () => void): () => void {
  const name = basename(file);
  let timer: NodeJS.Timeout | undefined;
  const watcher = watch(dirname(file), (_event, changed) => {
    if (changed && changed !== name) return;
    clearTimeout(timer);
    timer = setTimeout(onChange, 150);
  });
  watcher.unref();
  return () => {
    clearTimeout(timer);
    watcher.close();
  };
}
