#!/usr/bin/env node
/**
 * Proves the built kit runs end to end here (lavapipe) the way it would on a GPU machine: copies the tree as it
 * would travel (tracked files and untracked files git does not ignore, less those a GPU session leaves behind, plus
 * gpu-kit/kit.tar.xz and gpu-kit/models.tar.xz, which run.sh unpacks into public/models) to a folder with no
 * node_modules above it, puts a `node` first on PATH that fails if anything calls it, and runs tools/gpu-kit/run.sh
 * with the smoke plan, the tiny shape, a bench flag (--max-new-tokens 3) and two curve variants (--curves). Checks the
 * results file it writes.
 *
 *   node tools/gpu-kit/build.mjs && node tools/gpu-kit/check.mjs
 */
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LEAVE_BEHIND } from './leave-behind.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const archives = ['gpu-kit/kit.tar.xz', 'gpu-kit/models.tar.xz'];
for (const a of archives)
  if (!existsSync(join(root, a))) {
    console.error(`${a} is missing: run node tools/gpu-kit/build.mjs first.`);
    process.exit(1);
  }

const work = mkdtempSync(join(tmpdir(), 'gpu-kit-check-'));
const repo = join(work, 'repo');
const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
  cwd: root,
  encoding: 'utf8',
})
  .split('\0')
  .filter((f) => f && existsSync(join(root, f)) && !LEAVE_BEHIND.some((p) => f.startsWith(p)));
for (const f of files) {
  mkdirSync(dirname(join(repo, f)), { recursive: true });
  copyFileSync(join(root, f), join(repo, f));
}
mkdirSync(join(repo, 'gpu-kit'));
for (const a of archives) copyFileSync(join(root, a), join(repo, a));

const fakeBin = join(work, 'bin');
mkdirSync(fakeBin);
writeFileSync(
  join(fakeBin, 'node'),
  '#!/bin/sh\necho "the node on PATH was called: the kit is not self-contained" >&2\nexit 99\n',
);
chmodSync(join(fakeBin, 'node'), 0o755);

const results = join(work, 'results');
const { NODE_PATH: _a, NODE_OPTIONS: _b, VK_DRIVER_FILES: _c, WEBGPU_ADAPTER: _d, ...env } = process.env;
const started = performance.now();
const r = spawnSync(
  'sh',
  [
    'tools/gpu-kit/run.sh',
    '--plan',
    'smoke',
    '--out',
    results,
    '--max-new-tokens',
    '3',
    '--curves',
    'fp32/plain,fp32/hybrid',
  ],
  {
    cwd: repo,
    env: { ...env, PATH: `${fakeBin}:${env.PATH}`, KIT_SHAPES: 'tiny' },
    stdio: 'inherit',
    timeout: 600_000,
  },
);
const seconds = ((performance.now() - started) / 1000).toFixed(0);

function fail(why) {
  console.error(`\nFAIL: ${why} (left ${work} for a look)`);
  process.exit(1);
}
if (r.status !== 0) fail(`run.sh exited with ${r.status ?? r.signal}`);
if (existsSync(join(repo, 'node_modules'))) fail('a node_modules folder appeared in the copy');
const written = existsSync(results) ? readdirSync(results).filter((f) => f.endsWith('.json')) : [];
if (written.length !== 1) fail(`expected one results .json in ${results}, found ${written.length}`);
const { report, complete } = JSON.parse(readFileSync(join(results, written[0]), 'utf8'));
const curves = report.curves.filter((c) => c.model.endsWith('models/tiny'));
const bad = [
  !report.adapterName && 'no adapter name',
  complete !== true && 'the results file is not marked complete',
  !(report.roundTrip?.copyAndMap?.median > 0) &&
    `Dawn's round trips were not measured: ${JSON.stringify(report.roundTrip)}`,
  report.bench.maxNewTokens !== 3 &&
    `a bench flag was not passed on (--max-new-tokens 3: ${report.bench.maxNewTokens})`,
  report.bench.cells.length !== 2 && 'the harness did not run both methods',
  curves.map((c) => `${c.precision}/${c.graph}`).join(',') !== 'fp32/plain,fp32/hybrid' &&
    `the tiny model's curves are not the ones asked for with --curves: ${curves.map((c) => c.asked).join(', ')}`,
  curves.some((c) => c.error || !c.curve) && `a curve failed: ${curves.map((c) => c.error).join('; ')}`,
  !(report.exactChecks?.length >= 4) && "exact decoding's load check did not run for every precision and graph",
  report.exactChecks?.some((c) => c.error) &&
    `an exact check failed to run: ${report.exactChecks
      .map((c) => c.error)
      .filter(Boolean)
      .join('; ')}`,
].filter(Boolean);
if (bad.length) fail(bad.join('; '));
console.log(
  `\nOK: the kit ran from ${repo} without node_modules and without a node on PATH, in ${seconds} s, on ${report.adapterName}; ` +
    `it wrote ${written[0]}. Kit and models: ${archives.map((a) => `${(statSync(join(root, a)).size / 1e6).toFixed(1)} MB`).join(' and ')} compressed. Same tokens as plain ` +
    `greedy decoding: ${report.bench.cells.map((c) => `${c.method} ${c.matchesPlain ? 'yes' : 'NO (fp16 near-tie?)'}`).join(', ')}. ` +
    `Exact decoding passes its load check in: ${
      report.exactChecks
        .filter((c) => c.exact)
        .map((c) => `${c.precision} ${c.graph}`)
        .join(', ') || 'none'
    }.`,
);
rmSync(work, { recursive: true, force: true });
