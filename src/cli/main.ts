#!/usr/bin/env node
import { ConfigError } from '../errors.js';
import { buildProgram } from './program.js';

buildProgram(process.argv.slice(2))
  .then((program) => program.parseAsync())
  .catch((err: unknown) => {
    // A config error already starts with "invalid config <file>:"; the others get the program's name.
    process.stderr.write(err instanceof ConfigError ? `${err.message}\n` : `hookgate: ${(err as Error).message}\n`);
    process.exit(1);
  });
