#!/usr/bin/env node
/**
 * Dependency-free entry point for `npm start` and `npm test` on a fresh machine: installs what is missing (npm
 * packages from package-lock.json; Debian's chromium when /usr/bin/chromium is absent and we are root; lavapipe when
 * Dawn finds no Vulkan adapter for WebGPU in Node, see lavapipe.mjs), then runs the job. Only Node's standard
 * library is used here, because node_modules may not exist yet.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { constants, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ensureLavapipe } from './lavapipe.mjs';
import { unitTestFailuresIn } from './test-failures.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const env = { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip' };

/**
 * Where the set-up's own output goes (its messages, the commands it runs, the adapter found): stdout, except under
 * `generate`, whose stdout carries only the CLI's text or JSON (a pipe into a JSON parser got a "WebGPU in Node: …"
 * line first).
 */
let setupToStderr = false;

/** A message of the set-up's own. */
function say(...parts) {
  (setupToStderr ? console.error : console.log)(...parts);
}

function run(cmd, args, options = {}) {
  say(`\n> ${[cmd, ...args].join(' ')}`);
  const stdio = setupToStderr ? ['inherit', process.stderr, 'inherit'] : 'inherit';
  const r = spawnSync(cmd, args, { cwd: root, stdio, env, ...options });
  if (r.error) throw r.error;
  return r.status ?? 1;
}

function bin(name) {
  return join(root, 'node_modules', '.bin', name);
}

/**
 * Install from package-lock.json when node_modules is missing or was installed from another lock file. We use
 * `npm install` (which keeps the locked versions) rather than `npm ci`: the registry we can reach lacks some
 * optional platform packages of @biomejs/biome for other systems, and `npm ci` refuses a lock file without them.
 */
function ensureNodeModules() {
  const lock = readFileSync(join(root, 'package-lock.json'));
  const want = createHash('sha256').update(lock).digest('hex');
  const stamp = join(root, 'node_modules', '.bootstrap-lock-sha256');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === want) return want;
  say('Installing npm packages from package-lock.json...');
  if (run('npm', ['install', '--no-audit', '--no-fund']) !== 0) {
    console.error('npm install failed: see the output above.');
    process.exit(1);
  }
  writeFileSync(stamp, `${want}\n`);
  return want;
}

function ensureChromium() {
  if (existsSync(chromium)) return;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!isRoot) {
    console.error(
      `Chromium is missing at ${chromium}. The browser tests need Debian's chromium:\n` +
        '  sudo apt-get update && sudo apt-get install -y chromium\n' +
        "(or set CHROMIUM_PATH to a Chromium >= 120 binary). Playwright's own browser download is not used.",
    );
    process.exit(1);
  }
  say(`Chromium is missing at ${chromium}: installing Debian's chromium with apt-get...`);
  const aptEnv = { ...env, DEBIAN_FRONTEND: 'noninteractive' };
  if (
    run('apt-get', ['update'], { env: aptEnv }) !== 0 ||
    run('apt-get', ['install', '-y', 'chromium'], { env: aptEnv }) !== 0
  ) {
    console.error('apt-get could not install chromium: see the output above.');
    process.exit(1);
  }
  if (!existsSync(chromium)) {
    console.error(`apt-get finished but ${chromium} still does not exist.`);
    process.exit(1);
  }
}

/**
 * A Vulkan adapter for the Node WebGPU tests and the node-webgpu bench. When one is found (or installed), the tests
 * are told to expect it (NODE_WEBGPU_EXPECTED=1), so they fail rather than skip if it then goes missing.
 */
function ensureVulkan() {
  const { adapter, failed } = ensureLavapipe(root, run, env, say);
  if (failed) process.exit(1);
  if (adapter) {
    say(`WebGPU in Node: ${adapter}`);
    env.NODE_WEBGPU_EXPECTED = '1';
  }
}

function test() {
  ensureNodeModules();
  ensureChromium();
  ensureVulkan();
  // Vitest's JSON report too, so that the summary can say which unit tests failed (test-failures.mjs).
  const report = join(mkdtempSync(join(tmpdir(), 'spec-decoder-test-')), 'vitest.json');
  const unit = 'unit tests (vitest, Node: wasm EP, and WebGPU on Dawn)';
  const steps = [
    ['lint (biome)', bin('biome'), ['check', '.']],
    ['typecheck (tsc)', bin('tsc'), ['--noEmit', '-p', 'tsconfig.json']],
    [unit, bin('vitest'), ['run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`]],
    ['browser tests (playwright, Chromium with WebGPU)', bin('playwright'), ['test']],
  ];
  const failed = [];
  for (const [name, cmd, args] of steps) {
    console.log(`\n=== ${name} ===`);
    if (run(cmd, args) !== 0) failed.push(name);
  }
  console.log('\n=== summary ===');
  for (const [name] of steps) console.log(`${failed.includes(name) ? 'FAIL' : 'ok  '}  ${name}`);
  if (failed.includes(unit)) {
    console.log('\n=== failed unit tests ===');
    for (const line of unitTestFailuresIn(report, root)) console.log(line);
  }
  rmSync(dirname(report), { recursive: true, force: true });
  process.exit(failed.length === 0 ? 0 : 1);
}

function start() {
  ensureNodeModules();
  if (run(bin('vite'), ['build']) !== 0) process.exit(1);
  const port = process.env.PORT ?? '4173';
  console.log(`\nServing the demo page at http://127.0.0.1:${port}/ (Ctrl-C to stop)\n`);
  process.exit(run(bin('vite'), ['preview', '--host', '127.0.0.1', '--port', port, '--strictPort']));
}

/** Run a TypeScript entry point with tsx, passing the remaining arguments. */
function tsx(script, cwd = process.cwd()) {
  ensureNodeModules();
  const r = spawnSync(bin('tsx'), [join(root, script), ...process.argv.slice(3)], { cwd, stdio: 'inherit', env });
  // A child ended by a signal (Ctrl-C in the bench) exits as shells report it, 128 + the signal's number, not 1.
  process.exit(r.status ?? (r.signal ? 128 + (constants.signals[r.signal] ?? 0) : 1));
}

/**
 * What the CLI's bundle is made from: every file under src/ by path, size and modification time (a few ms), and the
 * installed packages (by the lock file's hash) since transformers.js is bundled too.
 */
function sourcesKey(lock) {
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
 * `npm run generate -- …`: the terminal front end, run in this process from one bundled file. Nothing is installed
 * for `--device webgpu`: without a Vulkan adapter the CLI falls back to wasm and says why (installing lavapipe with
 * apt-get is `npm test`'s business; run as root, a generate with no adapter ran apt-get for 10 s, then exited 1). Under tsx's loader the CLI's module graph took 0.8-0.9 s to load (every import
 * resolved through the loader's hooks); bundled, 0.1-0.2 s, transformers.js included (cliPackages). The bundle is made by esbuild
 * (about 0.5 s with transformers.js inside) when src/ or the lock file changed since the last one (cliBundle).
 */
async function generate() {
  const args = process.argv.slice(3);
  setupToStderr = true;
  let lock;
  try {
    lock = ensureNodeModules();
  } finally {
    setupToStderr = false;
  }
  const folder = process.env.SPEC_DECODER_CLI_BUNDLE_DIR || join(root, 'node_modules', '.cache', 'spec-decoder-cli');
  const file = await cliBundle(folder, lock);
  let cli;
  try {
    cli = await import(pathToFileURL(file).href);
  } catch (e) {
    // Another run, of other sources, removed this bundle between our look and our import: make it again.
    if (existsSync(file)) throw e;
    cli = await import(pathToFileURL(await cliBundle(folder, lock)).href);
  }
  cli.runProcess(args).then(
    (status) => process.exit(status),
    (e) => {
      console.error(`error: ${e?.stack ?? e}`);
      process.exit(1);
    },
  );
}

/**
 * The CLI's bundle for the sources as they are, in `folder` (node_modules/.cache/spec-decoder-cli, or
 * SPEC_DECODER_CLI_BUNDLE_DIR: a folder inside the project, where the bundle's imports of packages resolve):
 * made when missing, written whole through a rename, and the bundles of other sources removed. Runs side
 * by side each make the bundle of their sources; one that finds its bundle removed before importing it makes it again.
 */
async function cliBundle(folder, lock) {
  const file = join(folder, `cli-${sourcesKey(lock)}.mjs`);
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

/** `npm run bench`: the benchmark (Chromium is needed for the browser backends). */
function bench() {
  ensureNodeModules();
  ensureChromium();
  ensureVulkan();
  tsx('bench/run.ts', root);
}

const jobs = { test, start, generate, bench };
const job = jobs[process.argv[2]];
if (!job) {
  console.error(`usage: node tools/bootstrap.mjs ${Object.keys(jobs).join('|')}`);
  process.exit(2);
}
await job();
