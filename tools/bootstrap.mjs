#!/usr/bin/env node
/**
 * Dependency-free entry point for `npm start` and `npm test` on a fresh machine: installs what is missing (npm
 * packages from package-lock.json; Debian's chromium when /usr/bin/chromium is absent and we are root; lavapipe when
 * Dawn finds no Vulkan adapter for WebGPU in Node, see lavapipe.mjs), then runs the job. Only Node's standard
 * library is used here, because node_modules may not exist yet.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { importCliBundle } from './cli-bundle.mjs';
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
 * `npm run generate -- …`: the terminal front end, run in this process from one bundled file. Nothing is installed
 * for `--device webgpu`: without a Vulkan adapter the CLI falls back to wasm and says why (installing lavapipe with
 * apt-get is `npm test`'s business; run as root, a generate with no adapter ran apt-get for 10 s, then exited 1). Under tsx's loader the CLI's module graph took 0.8-0.9 s to load (every import
 * resolved through the loader's hooks); bundled, 0.1-0.2 s, transformers.js included (cli-bundle.mjs). The bundle is made by esbuild
 * (about 0.5 s with transformers.js inside) when src/ or the lock file changed since the last one (cli-bundle.mjs).
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
  const cli = await importCliBundle(root, folder, lock);
  cli.runProcess(args).then(
    (status) => process.exit(status),
    (e) => {
      console.error(`error: ${e?.stack ?? e}`);
      process.exit(1);
    },
  );
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
