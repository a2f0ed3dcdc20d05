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
import { loadModel } from '../src/model/load';
import type { Precision } from '../src/model/precision';
import { ModelRunner } from '../src/model/runner';
import { ortForNode } from '../src/runtime/ort-node';
import { argmaxCall, timeAlternated } from './alternated-calls';

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
console.log(
  `${values.model}, ${options.graph} graph, ${runners.after.precision}, ${values.threads} wasm thread(s): ms per call (median of ${values.calls}, alternated), before = ${values.before}`,
);
console.log('| cached tokens | q | before | after | after/before |');
console.log('| --- | --- | --- | --- | --- |');
const rows = await timeAlternated(runners, {
  contexts: numbers(values.contexts),
  qs: numbers(values.qs),
  calls: Number(values.calls),
  warmup: 60,
  call: argmaxCall,
});
for (const { context, q, ms } of rows)
  console.log(
    `| ${context} | ${q} | ${ms.before.toFixed(3)} | ${ms.after.toFixed(3)} | ${(ms.after / ms.before).toFixed(3)} |`,
  );
process.exit(0);
