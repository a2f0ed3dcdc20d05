/**
 * The wasm KV cache kept in JavaScript (src/model/host-cache.ts) against the cache passed through the graph, call
 * for call: two runners of one model in one process (hostCache on and off), each filled to the same context, then
 * calls of q tokens timed alternately, each followed by the compaction a round does (back to the context), so both
 * always attend to the same number of slots.
 *
 *   node --import tsx bench/host-cache-ab.ts [--model public/models/austen-target] [--graph hybrid]
 *     [--precision fp32] [--threads 2] [--contexts 64,256,512,1000] [--qs 1,8] [--calls 30]
 *
 * Prints ms per call (median) for both and their ratio.
 */
import { parseArgs } from 'node:util';
import { loadModel } from '../src/model/load';
import type { Precision } from '../src/model/precision';
import { ModelRunner } from '../src/model/runner';
import { ortForNode } from '../src/runtime/ort-node';
import { lastLogitsCall, timeAlternated } from './alternated-calls';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: 'public/models/austen-target' },
    graph: { type: 'string', default: 'hybrid' },
    precision: { type: 'string', default: 'fp32' },
    threads: { type: 'string', default: '2' },
    contexts: { type: 'string', default: '64,256,512,1000' },
    qs: { type: 'string', default: '1,8' },
    calls: { type: 'string', default: '30' },
  },
});
const graph = values.graph as 'plain' | 'hybrid';
const numbers = (s: string) => s.split(',').map(Number);
const ort = ortForNode(Number(values.threads));
const model = await loadModel(values.model);
const make = (hostCache: boolean) =>
  ModelRunner.create(ort, model, { device: 'wasm', graph, precision: values.precision as Precision, hostCache });
const runners = { host: await make(true), through: await make(false) };
console.log(
  `${values.model}, ${graph} graph, ${runners.host.precision}, ${values.threads} wasm thread(s): ms per call (median of ${values.calls}, interleaved)`,
);
console.log('| cached tokens | q | cache in JavaScript | through the graph | ratio |');
console.log('| --- | --- | --- | --- | --- |');
const rows = await timeAlternated(runners, {
  contexts: numbers(values.contexts),
  qs: numbers(values.qs),
  calls: Number(values.calls),
  warmup: 20,
  call: lastLogitsCall,
});
for (const { context, q, ms } of rows)
  console.log(
    `| ${context} | ${q} | ${ms.host.toFixed(2)} | ${ms.through.toFixed(2)} | ${(ms.host / ms.through).toFixed(2)} |`,
  );
for (const runner of Object.values(runners)) await runner.release();
process.exit(0);
