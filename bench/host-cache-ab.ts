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
import { chainBias } from '../src/engine/tree';
import { loadModel } from '../src/model/load';
import type { Precision } from '../src/model/precision';
import { ModelRunner } from '../src/model/runner';
import { ortForNode } from '../src/runtime/ort-node';
import { median } from '../src/util/median';

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
const runners = { host: await make(true), through: await make(false) } as const;
const kinds = ['host', 'through'] as const;
const lengths = { host: 0, through: 0 };

async function call(kind: (typeof kinds)[number], q: number): Promise<void> {
  const length = lengths[kind];
  const tokens = Array.from({ length: q }, (_, i) => 5 + ((length + i) % 300));
  await runners[kind].forward({
    tokens,
    positions: tokens.map((_, i) => length + i),
    bias: chainBias(length, q),
    rows: [q - 1],
  });
  lengths[kind] += q;
}

// Warm-up (V8 compiles and tiers up onnxruntime's kernels over the first calls), then back to an empty cache.
for (const kind of kinds) {
  for (let i = 0; i < 20; i++) await call(kind, i % 2 === 0 ? 1 : 8);
  runners[kind].reset();
  lengths[kind] = 0;
}
console.log(
  `${values.model}, ${graph} graph, ${runners.host.precision}, ${values.threads} wasm thread(s): ms per call (median of ${values.calls}, interleaved)`,
);
console.log('| cached tokens | q | cache in JavaScript | through the graph | ratio |');
console.log('| --- | --- | --- | --- | --- |');
for (const context of numbers(values.contexts)) {
  for (const kind of kinds) while (lengths[kind] < context) await call(kind, Math.min(32, context - lengths[kind]));
  for (const q of numbers(values.qs)) {
    const ms = { host: [] as number[], through: [] as number[] };
    for (let i = 0; i < Number(values.calls); i++) {
      for (const kind of kinds) {
        const t = performance.now();
        await call(kind, q);
        ms[kind].push(performance.now() - t);
        runners[kind].keep(Array.from({ length: context }, (_, j) => j));
        lengths[kind] = context;
      }
    }
    const host = median(ms.host);
    const through = median(ms.through);
    console.log(`| ${context} | ${q} | ${host.toFixed(2)} | ${through.toFixed(2)} | ${(host / through).toFixed(2)} |`);
  }
}
for (const kind of kinds) await runners[kind].release();
process.exit(0);
