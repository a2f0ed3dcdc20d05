/**
 * The CLI's bundle for `npm run generate` (bootstrap.mjs): src/cli.ts and transformers.js in one file made by esbuild,
 * kept in a folder inside the project and made again when src/ or the lock file changed. Node's standard library and
 * esbuild only (esbuild is imported when a bundle is made, after the packages are installed).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * What the CLI's bundle is made from: every file under src/ by path, size and modification time (a few ms), and the
 * installed packages (by the lock file's hash) since transformers.js is bundled too.
 */
function sourcesKey(root, lock) {
  const hash = createHash('sha256').update(`cli bundle v2\n${lock}\n`);
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else {
        const st = statSync(path);
        hash.update(`${path}:${st.size}:${st.mtimeMs}\n`);
      }
    }
  };
  walk(join(root, 'src'));
  return hash.digest('hex').slice(0, 16);
}

/** What the CLI needs of transformers.js: its tokenizers and chat templates, never images or its own inference. */
const NO_SHARP =
  "export default function sharp() { throw new Error('image processing (sharp) is not part of the spec-decoder CLI'); }";

/**
 * Packages stay outside the CLI's bundle (imported from node_modules), except transformers.js: bundled, without the
 * two native libraries its Node build loads as it is imported, which the CLI never uses. sharp (images) is replaced
 * by a function that says so (transformers.js refuses to load with none); onnxruntime-node (its own inference; ours
 * is onnxruntime-web) is not required, in the one line that requires it (if that line changes in another
 * transformers.js, the package is required as before). Importing the CLI took 0.25-0.3 s, 0.15 s of it sharp.
 */
const cliPackages = {
  name: 'cli-packages',
  setup(b) {
    b.onResolve({ filter: /^sharp$/ }, (a) => ({ path: a.path, namespace: 'cli-stub' }));
    b.onLoad({ filter: /.*/, namespace: 'cli-stub' }, () => ({ contents: NO_SHARP, loader: 'js' }));
    b.onResolve({ filter: /^[^./]/ }, (a) =>
      a.kind === 'entry-point' || a.path === '@huggingface/transformers' ? undefined : { path: a.path, external: true },
    );
    b.onLoad({ filter: /[\\/]@huggingface[\\/]transformers[\\/]dist[\\/]transformers\.node\.mjs$/ }, (a) => ({
      contents: readFileSync(a.path, 'utf8').replace('requireFromHere("onnxruntime-node")', '{}'),
      loader: 'js',
    }));
  },
};

/**
 * The CLI's bundle for the sources as they are, in `folder` (node_modules/.cache/spec-decoder-cli, or
 * SPEC_DECODER_CLI_BUNDLE_DIR: a folder inside the project, where the bundle's imports of packages resolve):
 * made when missing, written whole through a rename, and the bundles of other sources removed.
 */
async function cliBundle(root, folder, lock) {
  const file = join(folder, `cli-${sourcesKey(root, lock)}.mjs`);
  if (existsSync(file)) return file;
  const { build } = await import('esbuild');
  const built = await build({
    entryPoints: [join(root, 'src', 'cli.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    write: false,
    logLevel: 'error',
    minifyWhitespace: true,
    minifySyntax: true,
    plugins: [cliPackages],
  });
  mkdirSync(folder, { recursive: true });
  const partial = `${file}.${process.pid}.tmp`;
  writeFileSync(partial, built.outputFiles[0].contents);
  renameSync(partial, file);
  // Earlier bundles (of other sources) are not needed again; a run that loaded one has it in memory already.
  for (const old of readdirSync(folder)) {
    if (join(folder, old) !== file && /^cli-[0-9a-f]+\.mjs$/.test(old)) rmSync(join(folder, old), { force: true });
  }
  return file;
}

/**
 * The CLI's module, from its bundle (cliBundle). Runs side by side each make the bundle of their sources; one whose
 * bundle another run (of other sources) removed between the look and the import makes it again.
 */
export async function importCliBundle(root, folder, lock) {
  const file = await cliBundle(root, folder, lock);
  try {
    return await import(pathToFileURL(file).href);
  } catch (e) {
    if (existsSync(file)) throw e;
    return await import(pathToFileURL(await cliBundle(root, folder, lock)).href);
  }
}
