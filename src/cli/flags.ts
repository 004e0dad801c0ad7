/** The program's global flags, and the lines for people they govern (loaded by every command: keep it small). */

/** Set once from the global `--verbose` before a command runs. */
export const cliFlags = { verbose: false };

/** A line for people about what the command uses: with --verbose, or when stderr is a terminal (never in a pipe). */
export function announce(line: string): void {
  if (cliFlags.verbose || process.stderr.isTTY) process.stderr.write(`hookgate: ${line}\n`);
}

/** Only with --verbose (details a script may want on stderr, like the HTTP status). */
export function verbose(line: string): void {
  if (cliFlags.verbose) process.stderr.write(`hookgate: ${line}\n`);
}
