/**
 * What int8 and int4 cost in quality, on the bundled target (trained weights, unlike the random real shapes):
 * held-out loss of fp32, int8 (per-channel weights, inputs quantised per row) and int4 (symmetric, and with zero
 * points) on Persuasion's held-out chapters, teacher-forced top-1 agreement with fp32, and agreement on fp32's own greedy continuations of the held-out prompts (what
 * greedy decoding sees). Needs tools/data/austen_val.txt (bash tools/prepare_data.sh).
 *
 *   npx tsx tools/quant-quality.ts [--model public/models/austen-target] [--window 256] [--tokens 32]
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { chainBias } from '../src/engine/tree';
import { loadModel } from '../src/model/load';
import { ModelRunner, type RunnerOptions } from '../src/model/runner';
import { ortForNode } from '../src/runtime/ort-node';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: 'public/models/austen-target' },
    text: { type: 'string', default: 'tools/data/austen_val.txt' },
    prompts: { type: 'string', default: 'tools/data/heldout_prompts.txt' },
    window: { type: 'string', default: '256' },
    tokens: { type: 'string', default: '32' },
  },
});

if (!existsSync(String(values.text))) {
  console.error(`quant-quality: ${values.text} is missing; run bash tools/prepare_data.sh first`);
  process.exit(2);
}

const ort = ortForNode();
const model = await loadModel(String(values.model));
const V = model.config.vocabSize;
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

const variants: [string, Omit<RunnerOptions, 'device'>][] = [
  ['fp32', { precision: 'fp32', graph: 'fused' }],
  ['int8 (per channel, inputs per row)', { precision: 'int8', graph: 'fused', rowInvariantAttention: false }],
  ['int4 (symmetric, block 32)', { precision: 'int4', graph: 'fused' }],
  ['int4 (zero points, block 32)', { precision: 'int4', graph: 'fused', int4: { zeroPoints: true } }],
];
// One at a time: onnxruntime-web does not create sessions concurrently.
const runners: ModelRunner[] = [];
for (const [, o] of variants) runners.push(await ModelRunner.create(ort, model, { device: 'wasm', ...o }));

/** Logits of every position of a fresh sequence. */
async function logitsOf(r: ModelRunner, ids: readonly number[]): Promise<Float32Array> {
  r.reset();
  return r.forward({
    tokens: ids,
    positions: range(ids.length),
    bias: chainBias(0, ids.length),
    rows: range(ids.length),
  });
}

function logSoftmaxAt(row: Float32Array, token: number): number {
  let max = Number.NEGATIVE_INFINITY;
  for (const v of row) if (v > max) max = v;
  let sum = 0;
  for (const v of row) sum += Math.exp(v - max);
  return (row[token] as number) - max - Math.log(sum);
}

function argmax(row: Float32Array): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if ((row[i] as number) > (row[best] as number)) best = i;
  return best;
}

// Held-out loss and teacher-forced agreement, in windows scored from scratch (as tools/eval.py does).
const ids = model.tokenizer.encode(readFileSync(String(values.text), 'utf8'));
const W = Number(values.window);
const nll = variants.map(() => 0);
const agree = variants.map(() => 0);
let scored = 0;
for (let start = 0; start + W <= ids.length; start += W) {
  const window = ids.slice(start, start + W);
  const rows: Float32Array[] = [];
  for (const r of runners) rows.push(await logitsOf(r, window));
  for (let p = 0; p + 1 < W; p++) {
    const next = window[p + 1] as number;
    const ref = argmax((rows[0] as Float32Array).subarray(p * V, (p + 1) * V));
    rows.forEach((l, v) => {
      const row = l.subarray(p * V, (p + 1) * V);
      nll[v] = (nll[v] as number) - logSoftmaxAt(row, next);
      if (argmax(row) === ref) agree[v] = (agree[v] as number) + 1;
    });
    scored++;
  }
}

// Greedy continuations of the held-out prompts by fp32; how often each variant's argmax agrees along them, and how
// many of its own greedy continuations are identical.
const prompts = readFileSync(String(values.prompts), 'utf8')
  .split('\n')
  .filter((l) => l.trim());
const N = Number(values.tokens);
/** N greedy tokens after the prompt, one cached call per token. */
async function greedy(r: ModelRunner, prompt: number[]): Promise<number[]> {
  r.reset();
  const P = prompt.length;
  let logits = await r.forward({ tokens: prompt, positions: range(P), bias: chainBias(0, P), rows: [P - 1] });
  const out: number[] = [];
  for (let i = 0; i < N; i++) {
    const t = argmax(logits);
    out.push(t);
    if (i + 1 < N) logits = await r.forward({ tokens: [t], positions: [P + i], bias: chainBias(P + i, 1), rows: [0] });
  }
  return out;
}
const along = variants.map(() => 0);
const identical = variants.map(() => 0);
const prefix = variants.map(() => 0);
for (const text of prompts) {
  const p = model.tokenizer.encode(text);
  const ref = await greedy(runners[0] as ModelRunner, p);
  for (let v = 0; v < runners.length; v++) {
    const r = runners[v] as ModelRunner;
    const forced = await logitsOf(r, [...p, ...ref]);
    for (let i = 0; i < N; i++) {
      const at = p.length - 1 + i;
      if (argmax(forced.subarray(at * V, (at + 1) * V)) === ref[i]) along[v] = (along[v] as number) + 1;
    }
    const own = v === 0 ? ref : await greedy(r, p);
    if (own.every((t, i) => t === ref[i])) identical[v] = (identical[v] as number) + 1;
    const common = own.findIndex((t, i) => t !== ref[i]);
    prefix[v] = (prefix[v] as number) + (common < 0 ? N : common);
  }
}

const report = variants.map(([name], v) => ({
  variant: name,
  weightMB: (runners[v] as ModelRunner).computeWeightBytes / 1e6,
  heldOutLoss: (nll[v] as number) / scored,
  perplexity: Math.exp((nll[v] as number) / scored),
  top1AgreementWithFp32: (agree[v] as number) / scored,
  agreementOnFp32GreedyContinuations: (along[v] as number) / (prompts.length * N),
  identicalGreedyContinuations: `${identical[v]}/${prompts.length}`,
  meanCommonPrefix: (prefix[v] as number) / prompts.length,
}));
const lines = [
  `Held-out: ${scored} tokens of ${values.text} in ${W}-token windows; ${prompts.length} held-out prompts x ${N} greedy tokens (${values.model}, wasm EP)`,
  '',
  '| weights | MB read per call | held-out loss | perplexity | top-1 agreement with fp32 (teacher-forced) | agreement on fp32 greedy continuations | identical greedy continuations | mean common prefix |',
  '| --- | --- | --- | --- | --- | --- | --- | --- |',
  ...report.map(
    (r) =>
      `| ${r.variant} | ${r.weightMB.toFixed(1)} | ${r.heldOutLoss.toFixed(4)} | ${r.perplexity.toFixed(2)} | ${(100 * r.top1AgreementWithFp32).toFixed(1)}% | ${(100 * r.agreementOnFp32GreedyContinuations).toFixed(1)}% | ${r.identicalGreedyContinuations} | ${r.meanCommonPrefix.toFixed(1)} of ${N} |`,
  ),
];
console.log(lines.join('\n'));
mkdirSync('tools/runs', { recursive: true });
writeFileSync(
  'tools/runs/quant-quality.json',
  `${JSON.stringify({ report, scored, prompts: prompts.length }, null, 1)}\n`,
);
for (const r of runners) await r.release();
