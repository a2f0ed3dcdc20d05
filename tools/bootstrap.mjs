#!/usr/bin/env node
/**
 * Dependency-free entry point for `npm start` and `npm test` on a fresh machine: installs what is missing (npm
 * packages from package-lock.json; Debian's chromium when /usr/bin/chromium is absent and we are root; lavapipe when
 * Dawn finds no Vulkan adapter for WebGPU in Node, see lavapipe.mjs), then runs the job. Only Node's standard
 * library is used here, because node_modules may not exist yet.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureLavapipe } from './lavapipe.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const env = { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip' };

function run(cmd, args, options = {}) {
  console.log(`\n> ${[cmd, ...args].join(' ')}`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env, ...options });
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
  if (existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === want) return;
  console.log('Installing npm packages from package-lock.json...');
  if (run('npm', ['install', '--no-audit', '--no-fund']) !== 0) {
    console.error('npm install failed: see the output above.');
    process.exit(1);
  }
  writeFileSync(stamp, `${want}\n`);
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
  console.log(`Chromium is missing at ${chromium}: installing Debian's chromium with apt-get...`);
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
  const { adapter, failed } = ensureLavapipe(root, run, env);
  if (failed) process.exit(1);
  if (adapter) {
    console.log(`WebGPU in Node: ${adapter}`);
    env.NODE_WEBGPU_EXPECTED = '1';
  }
}

function test() {
  ensureNodeModules();
  ensureChromium();
  ensureVulkan();
  const steps = [
    ['lint (biome)', bin('biome'), ['check', '.']],
    ['typecheck (tsc)', bin('tsc'), ['--noEmit', '-p', 'tsconfig.json']],
    ['unit tests (vitest, Node: wasm EP, and WebGPU on Dawn)', bin('vitest'), ['run']],
    ['browser tests (playwright, Chromium with WebGPU)', bin('playwright'), ['test']],
  ];
  const failed = [];
  for (const [name, cmd, args] of steps) {
    console.log(`\n=== ${name} ===`);
    if (run(cmd, args) !== 0) failed.push(name);
  }
  console.log('\n=== summary ===');
  for (const [name] of steps) console.log(`${failed.includes(name) ? 'FAIL' : 'ok  '}  ${name}`);
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
  process.exit(r.status ?? 1);
}

/** `npm run generate -- …`: the terminal front end (with `--device webgpu`, a Vulkan adapter is made sure of). */
function generate() {
  const args = process.argv.slice(3).join(' ');
  if (/--device[= ]webgpu\b/.test(args)) {
    ensureNodeModules();
    ensureVulkan();
  }
  tsx('src/cli.ts');
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
job();
