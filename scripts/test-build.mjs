// The test run's build: one TypeScript program over src/ and test/ (tsconfig.test.json), type-checked once and
// emitted once, incrementally (only files changed since the last run, and those that depend on them, are checked
// and written again).
//
// Where the output goes:
// - src/ → dist/, the product build: the same files `npm run build` writes (source maps included), so the
//   end-to-end tests start the real binary and no second compile of src/ is needed;
// - test/ → .test-build/test/, run by plain `node --test`;
// - .test-build/src is a link to ../dist, so a compiled test's `../src/x.js` is the product module itself
//   (Node resolves the link: `import.meta.url` of src modules is under dist/, where they find dashboard/ and
//   package.json as in the installed package).
//
// `rm -rf .test-build` forces a full build. Anything else that changes dist/ (npm run build, a branch switch) is
// noticed by a signature of dist/'s files, and the next run rebuilds everything.
import { createHash } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

/** Signature of a folder's files (path, size, mtime): it changes whenever a file there is written. */
function folderSignature(dir) {
  const hash = createHash('sha256');
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else {
        const s = statSync(p);
        hash.update(`${relative(dir, p)}\0${s.size}\0${s.mtimeMs}\n`);
      }
    }
  };
  if (existsSync(dir)) walk(dir);
  return hash.digest('hex');
}

/**
 * Builds for the test run. Returns the number of files written, or false when the program has errors (printed;
 * nothing is written then).
 */
export function buildForTests(rootDir) {
  // Normalised: a trailing slash would differ from the recorded rootDir and make every run a full one.
  const root = resolve(rootDir);
  const out = join(root, '.test-build');
  const dist = join(root, 'dist');
  const buildInfo = join(out, 'tsbuildinfo');
  const distSig = join(out, 'dist.sig');

  const parsed = ts.getParsedCommandLineOfConfigFile(
    join(root, 'tsconfig.test.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  );
  const options = {
    ...parsed.options,
    noEmit: false,
    rootDir: root,
    outDir: out,
    incremental: true,
    tsBuildInfoFile: buildInfo,
  };

  // An earlier build's record only holds while its output is there unchanged.
  const sigNow = folderSignature(dist);
  const intact = existsSync(join(out, 'test')) && existsSync(distSig) && readFileSync(distSig, 'utf8') === sigNow;
  if (!intact) rmSync(buildInfo, { force: true });

  const host = ts.createIncrementalCompilerHost(options);
  const program = ts.createIncrementalProgram({
    rootNames: parsed.fileNames,
    options,
    host,
    configFileParsingDiagnostics: ts.getConfigFileParsingDiagnostics(parsed),
  });
  const diagnostics = [
    ...program.getConfigFileParsingDiagnostics(),
    ...program.getOptionsDiagnostics(),
    ...program.getGlobalDiagnostics(),
    ...program.getSyntacticDiagnostics(),
    ...program.getSemanticDiagnostics(),
  ];
  if (diagnostics.length > 0) {
    const fmt = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => root, getNewLine: () => '\n' };
    const text = process.stdout.isTTY
      ? ts.formatDiagnosticsWithColorAndContext(diagnostics, fmt)
      : ts.formatDiagnostics(diagnostics, fmt);
    process.stderr.write(`${text}\nFound ${diagnostics.length} error(s).\n`);
    return false;
  }

  const srcOut = join(out, 'src') + sep;
  let written = 0;
  const write = (file, text) => {
    written++;
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
  };
  const result = program.emit(undefined, (file, text) => {
    if (!file.startsWith(srcOut)) return write(file, text);
    // One folder shallower in dist/ than in .test-build/src/: a map's path back to its source loses one `../`.
    const target = join(dist, file.slice(srcOut.length));
    if (file.endsWith('.map')) {
      const map = JSON.parse(text);
      map.sources = map.sources.map((s) => s.replace(/^\.\.\//, ''));
      text = JSON.stringify(map);
    }
    write(target, text);
  });
  if (result.emitSkipped) {
    process.stderr.write('scripts/test-build.mjs: TypeScript skipped the emit\n');
    return false;
  }

  const link = join(out, 'src');
  if (!existsSync(link) && !isLink(link)) symlinkSync('../dist', link, 'dir');
  writeFileSync(distSig, folderSignature(dist));
  return written;
}

function isLink(p) {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

// `node scripts/test-build.mjs`: the build alone (dist/ and .test-build/), without running any test.
if (import.meta.url === `file://${process.argv[1]}`) {
  const started = Date.now();
  const written = buildForTests(new URL('..', import.meta.url).pathname);
  if (written === false) process.exit(1);
  console.log(`build: ${written} files written in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
