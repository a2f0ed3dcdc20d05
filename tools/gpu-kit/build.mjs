#!/usr/bin/env node
/**
 * Builds the GPU kit: what a machine with a GPU, no network and no Node needs to run the benchmark's node-webgpu
 * backend and the verify-cost curves (bench/gpu-kit.ts) beside this repository's tracked files:
 *
 *   gpu-kit/kit/bin/node                       this machine's Node binary, stripped
 *   gpu-kit/kit/app/gpu-kit.mjs                the engine + bench bundled for Node (esbuild)
 *   gpu-kit/kit/app/dist/linux-x64/dawn.node   Dawn's bindings (npm webgpu), stripped, where the bundle looks
 *   gpu-kit/kit/app/ort-wasm-simd-threaded.asyncify.{wasm,mjs}   onnxruntime-web's WebGPU-EP wasm, beside the bundle
 *   gpu-kit/kit/lib/libvulkan.so.1             the Vulkan loader (the GPU machine brings its vendor driver)
 *   gpu-kit/kit/lib/compat/libstdc++.so.6      used only if the machine's own is too old for dawn.node
 *   gpu-kit/kit.tar.xz                         all of the above, compressed
 *   gpu-kit/models.tar.xz                      the bundled target, draft model and EAGLE-3 head, compressed (run.sh
 *                                              unpacks them into public/models where the tree left them behind)
 *   gpu-kit/medusa.tar.xz                      the bundled Medusa heads (10 MB), which do not fit beside the rest: a
 *                                              first call carries them with the kit (run.sh --unpack-only), a second,
 *                                              on the still-warm machine, the models (README, GPU kit)
 *
 * The bundle is not minified, so that errors from the GPU machine are readable. gpu-kit/ is git-ignored. The kit, the
 * packed models and the tracked tree must fit in 64 MiB (what travels to a GPU machine); the build fails when they
 * do not. Packed, the models leave room for the draft model and the EAGLE head together (xz takes 3.6 MB off their
 * 36 MB): carried as files, the tree held one or the other.
 * tools/gpu-kit/run.sh runs it; tools/gpu-kit/check.mjs proves it runs here.
 *
 *   node tools/gpu-kit/build.mjs
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, realpathSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { LEAVE_BEHIND } from './leave-behind.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const out = join(root, 'gpu-kit');
const kit = join(out, 'kit');
const archive = join(out, 'kit.tar.xz');
const LIMIT = 64 * 2 ** 20;
const MB = (n) => `${(n / 1e6).toFixed(1)} MB`;

if (process.platform !== 'linux' || process.arch !== 'x64') {
  console.error('The kit carries linux-x64 binaries (the GPU machines are linux-x64): build it on linux-x64.');
  process.exit(1);
}

rmSync(out, { recursive: true, force: true });
for (const d of ['bin', 'app/dist/linux-x64', 'lib/compat']) mkdirSync(join(kit, d), { recursive: true });

// The engine and the bench, one ESM file. transformers.js (only its tokenizers are used) is taken in its web
// build: the Node build loads onnxruntime-node and sharp at import time, which the kit does not carry.
const transformersWeb = join(root, 'node_modules/@huggingface/transformers/dist/transformers.web.js');
await build({
  entryPoints: [join(root, 'bench/gpu-kit.ts')],
  outfile: join(kit, 'app/gpu-kit.mjs'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Not minified: a stack trace from the GPU machine should be readable (costs about 0.1 MB compressed).
  minify: false,
  legalComments: 'none',
  logLevel: 'warning',
  banner: {
    js: "import { createRequire as __kitRequire } from 'node:module'; const require = __kitRequire(import.meta.url);",
  },
  plugins: [
    {
      name: 'transformers-web-build',
      setup(b) {
        b.onResolve({ filter: /^@huggingface\/transformers$/ }, () => ({ path: transformersWeb }));
      },
    },
  ],
});

const strip = (from, to, mode) => {
  execFileSync('strip', [mode, '-o', to, from]);
  chmodSync(to, statSync(from).mode);
};
strip(process.execPath, join(kit, 'bin/node'), '--strip-all');
strip(
  join(root, 'node_modules/webgpu/dist/linux-x64/dawn.node'),
  join(kit, 'app/dist/linux-x64/dawn.node'),
  '--strip-unneeded',
);
// ORT in Node imports its wasm glue (.mjs) and loads the wasm from beside the bundle (import.meta.url).
for (const f of ['ort-wasm-simd-threaded.asyncify.wasm', 'ort-wasm-simd-threaded.asyncify.mjs']) {
  copyFileSync(join(root, 'node_modules/onnxruntime-web/dist', f), join(kit, 'app', f));
}

/** A shared library of this machine, found through the dynamic loader's cache. */
function systemLibrary(name, hint) {
  const line = execFileSync('ldconfig', ['-p'], { encoding: 'utf8' })
    .split('\n')
    .find((l) => l.includes(`${name} (`) && l.includes('x86-64'));
  if (!line) {
    console.error(`${name} is not installed here: ${hint}`);
    process.exit(1);
  }
  return realpathSync(line.split('=>')[1].trim());
}
copyFileSync(
  systemLibrary('libvulkan.so.1', 'apt-get install -y libvulkan1 (npm test installs it with lavapipe)'),
  join(kit, 'lib/libvulkan.so.1'),
);
copyFileSync(systemLibrary('libstdc++.so.6', 'apt-get install -y libstdc++6'), join(kit, 'lib/compat/libstdc++.so.6'));

const du = (path) => Number(execFileSync('du', ['-sb', path], { encoding: 'utf8' }).split('\t')[0]);
/** tar + xz of `entries` under `dir`. KIT_XZ_OPT=-1 packs in seconds while iterating (too big to carry then: the size
 * checks below say so). */
const packXz = (file, dir, entries) =>
  execFileSync('tar', ['-cJf', file, '-C', dir, ...entries], {
    env: { ...process.env, XZ_OPT: process.env.KIT_XZ_OPT ?? '-9 -T0' },
  });
console.log(`kit folder: ${MB(du(kit))}; compressing (xz)...`);
packXz(archive, out, ['kit']);

/** The models the GPU run uses, packed: the tree leaves public/models behind (LEAVE_BEHIND) and run.sh unpacks these. */
const PACKED_MODELS = ['austen-target', 'austen-draft', 'austen-eagle3'];
const modelsArchive = join(out, 'models.tar.xz');
console.log(`packing ${PACKED_MODELS.join(', ')} (xz)...`);
packXz(modelsArchive, join(root, 'public/models'), PACKED_MODELS);

/** The Medusa heads, packed apart: with the kit in a first call, not the models (see the header). */
const medusaArchive = join(out, 'medusa.tar.xz');
console.log('packing austen-medusa apart (xz)...');
packXz(medusaArchive, join(root, 'public/models'), ['austen-medusa']);

/*
 * Tracked files the GPU run does not need or gets packed (LEAVE_BEHIND, leave-behind.mjs: the models, in
 * gpu-kit/models.tar.xz, Medusa's heads, which do not fit, and the kit's bench skips heads methods whose heads are
 * absent; the fixtures are for tests; the kit writes its results into bench/results, which it creates). With them
 * the tree plus the kit exceed what travels, so a GPU session leaves them behind first. Not counted below.
 */
const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' })
  .split('\0')
  .filter((f) => f && !LEAVE_BEHIND.some((p) => f.startsWith(p)))
  .reduce((sum, f) => {
    try {
      return sum + statSync(join(root, f)).size;
    } catch {
      return sum; // deleted in the work tree
    }
  }, 0);
const packed = statSync(archive).size + statSync(modelsArchive).size;
for (const [what, path] of [
  ['node', 'bin/node'],
  ['dawn.node', 'app/dist/linux-x64/dawn.node'],
  ['ORT wasm', 'app/ort-wasm-simd-threaded.asyncify.wasm'],
  ['bundle', 'app/gpu-kit.mjs'],
  ['libvulkan', 'lib/libvulkan.so.1'],
  ['libstdc++', 'lib/compat/libstdc++.so.6'],
]) {
  console.log(`  ${what.padEnd(10)} ${MB(statSync(join(kit, path)).size)}`);
}
const withHeads = statSync(archive).size + statSync(medusaArchive).size + tracked;
console.log(
  `${medusaArchive}: ${MB(statSync(medusaArchive).size)} (carried in a call of its own with the kit: kit, heads and tree come to ${MB(withHeads)})`,
);
if (withHeads > LIMIT) {
  console.error('Too big to travel with the tree: the kit, the Medusa heads and the tracked files exceed 64 MiB.');
  process.exit(1);
}
console.log(
  `${archive}: ${MB(statSync(archive).size)}; ${modelsArchive}: ${MB(statSync(modelsArchive).size)}; tracked tree ${MB(tracked)} (without ${LEAVE_BEHIND.join(', ')}, which a GPU session leaves behind: see LEAVE_BEHIND); together ${MB(packed + tracked)} of ${MB(LIMIT)} (64 MiB)`,
);
if (packed + tracked > LIMIT) {
  console.error('Too big to travel with the tree: the kit, the packed models and the tracked files exceed 64 MiB.');
  process.exit(1);
}
