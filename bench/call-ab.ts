/**
 * Call-for-call A/B of the model runner against another checkout's (a git worktree of an earlier commit): both
 * runners load the same model in one process and onnxruntime, then calls of q tokens at a given context alternate
 * between them (each followed by the compaction back to the context that a round does), so both meet the same
 * machine drift. For changes to the runner or the graph whose effect (a few percent of a call) drowns in the
 * benchmark's run-to-run noise.
 *
 *   git worktree add /tmp/before <commit>   # its node_modules: a folder of links to this checkout's entries
 *   node --import tsx bench/call-ab.ts --before /tmp/before [--model public/models/austen-target] [--graph hybrid]
 *     [--precision fp32] [--threads 2] [--contexts 64,200] [--qs 1,4] [--calls 300]
 *
 * Prints ms per call (median) before and after, and their ratio.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { chainBias } from '../src/engine/tree';
import { loadModel } from '../src/model/load';
import type { Precision } from '../src/model/precision';
import { ModelRunner } from '../src/model/runner';
import { ortForNode } from '../src/runtime/ort-node';
import { median } from '../src/util/median';

const { values } = parseArgs({
  options: {
    before: { type: 'string' },
    model: { type: 'string', default: 'public/models/austen-target' },
    graph: { type: 'string', default: 'hybrid' },
    precision: { type: 'string', default: 'fp32' },
    threads: { type: 'string', default: '2' },
    contexts: { type: 'string', default: '64,200' },
    qs: { type: 'string', default: '1,4' },
    calls: { type: 'string', default: '300' },
  },
});
if (!values.before) throw new Error('call-ab: --before DIR (a checkout of the commit to compare with) is required');
const numbers = (s: string) => s.split(',').map(Number);
const ort = ortForNode(Number(values.threads));
const model = await loadModel(values.model as string);
const options = {
  device: 'wasm' as const,
  graph: values.graph as 'plain' | 'hybrid',
  precision: values.precision as Precision,
};
const earlier = (await import(pathToFileURL(resolve(values.before, 'src/model/runner.ts')).href)) as {
  ModelRunner: typeof ModelRunner;
};
const runners = {
  before: await earlier.ModelRunner.create(ort, model, options),
  after: await ModelRunner.create(ort, model, options),
};
const kinds = ['before', 'after'] as const;
type Kind = (typeof kinds)[number];
const lengths: Record<Kind, number> = { before: 0, after: 0 };

async function call(kind: Kind, q: number): Promise<void> {
  const length = lengths[kind];
  const tokens = Array.from({ length: q }, (_, i) => 5 + ((length + i) % 300));
  await runners[kind].forwardArgmax({
    tokens,
    positions: tokens.map((_, i) => length + i),
    bias: chainBias(length, q),
    rows: tokens.map((_, i) => i),
  });
  lengths[kind] += q;
}

// Warm-up, then back to an empty cache.
for (const kind of kinds) {
  for (let i = 0; i < 60; i++) await call(kind, i % 2 === 0 ? 1 : 4);
  runners[kind].reset();
  lengths[kind] = 0;
}
console.log(
  `${values.model}, ${options.graph} graph, ${runners.after.precision}, ${values.threads} wasm thread(s): ms per call (median of ${values.calls}, alternated), before = ${values.before}`,
);
console.log('| cached tokens | q | before | after | after/before |');
console.log('| --- | --- | --- | --- | --- |');
for (const context of numbers(values.contexts)) {
  for (const kind of kinds) while (lengths[kind] < context) await call(kind, Math.min(32, context - lengths[kind]));
  for (const q of numbers(values.qs)) {
    const ms: Record<Kind, number[]> = { before: [], after: [] };
    for (let i = 0; i < Number(values.calls); i++) {
      for (const kind of i % 2 === 0 ? kinds : [...kinds].reverse()) {
        const t = performance.now();
        await call(kind, q);
        ms[kind].push(performance.now() - t);
        runners[kind].keep(Array.from({ length: context }, (_, j) => j));
        lengths[kind] = context;
      }
    }
    const before = median(ms.before);
    const after = median(ms.after);
    console.log(`| ${context} | ${q} | ${before.toFixed(3)} | ${after.toFixed(3)} | ${(after / before).toFixed(3)} |`);
  }
}
process.exit(0);
