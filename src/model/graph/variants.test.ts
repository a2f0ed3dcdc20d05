/**
 * int4 weights and the fused graph on the wasm EP: each against the float64 reference (on the dequantised weights for
 * int4), the fused graph against the plain one, tree calls against their paths run alone, compaction, and the
 * argmax output.
 */
import { describe, expect, it } from 'vitest';
import { checkTreeConsistency } from '../../diagnostics/tree-check';
import { chainBias, treeAttentionBias } from '../../engine/tree';
import { ortForNode } from '../../runtime/ort-node';
import { maxDiff } from '../../util/max-diff';
import { ModelRunner, type RunnerOptions } from '../runner';
import { int4Reference } from '../testing/quantized-reference';
import { GRAPH_TEST_MODELS, randomModel } from '../testing/random-model';
import { referenceForward } from '../testing/reference-llama';
import { visibleStore } from '../testing/visible-store';
import { forgetVariantChoices, measureVariants } from '../variant';

const ort = ortForNode();
const PROMPT = [3, 17, 42, 8, 25, 60, 1];
const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const causal = (i: number, j: number) => j <= i;

function argmaxRows(logits: Float32Array, vocab: number): number[] {
  const out: number[] = [];
  for (let r = 0; r < logits.length / vocab; r++) {
    let best = 0;
    for (let i = 1; i < vocab; i++)
      if ((logits[r * vocab + i] as number) > (logits[r * vocab + best] as number)) best = i;
    out.push(best);
  }
  return out;
}

const prefill = { tokens: PROMPT, positions: range(PROMPT.length), bias: chainBias(0, PROMPT.length) };

const MODELS = GRAPH_TEST_MODELS;

describe('int4 weights (MatMulNBits) vs the float64 reference on the dequantised weights (wasm EP)', () => {
  for (const graph of ['plain', 'fused'] as const) {
    for (const zeroPoints of [false, true]) {
      for (const [name, overrides] of MODELS) {
        it(`${graph}, ${zeroPoints ? 'zero points' : 'symmetric'}: ${name}`, async () => {
          const { model, weights } = randomModel(overrides, 'BF16');
          const runner = await ModelRunner.create(ort, model, {
            device: 'wasm',
            precision: 'int4',
            graph,
            int4: { zeroPoints },
          });
          expect(runner.precision).toBe('int4');
          const logits = await runner.forward({ ...prefill, rows: range(PROMPT.length) });
          const ref = int4Reference(model.config, weights, { zeroPoints });
          const expected = referenceForward(ref.cfg, ref.weights, PROMPT, range(PROMPT.length), causal);
          expect(
            maxDiff(
              logits,
              expected.flatMap((r) => Array.from(r)),
            ),
          ).toBeLessThan(1e-4);
          // And it is a different function from the float model: the reference is not vacuous.
          const float = referenceForward(model.config, weights, PROMPT, range(PROMPT.length), causal);
          expect(
            maxDiff(
              logits,
              float.flatMap((r) => Array.from(r)),
            ),
          ).toBeGreaterThan(1e-2);
          await runner.release();
        });
      }
    }
  }
});

describe('the fused and hybrid graphs (contrib ops) equal the plain graph (wasm EP)', () => {
  for (const precision of ['fp32', 'int4'] as const) {
    for (const [name, overrides] of MODELS) {
      it(`${precision}: prefill, then a tree call after a compaction: ${name}`, async () => {
        const { model } = randomModel(overrides);
        const runs: Float32Array[][] = [];
        for (const graph of ['plain', 'fused', 'hybrid'] as const) {
          const r = await ModelRunner.create(ort, model, { device: 'wasm', precision, graph });
          expect(r.variant).toBe(graph);
          const a = await r.forward({ ...prefill, rows: range(PROMPT.length) });
          // Two siblings, accept the second, then a tree of four over the compacted cache.
          await r.forward({ tokens: [5, 9], positions: [7, 7], bias: treeAttentionBias(7, [-1, -1]), rows: [0, 1] });
          r.keep([...range(7), 8]);
          const parents = [-1, 0, 0, 1];
          const b = await r.forward({
            tokens: [4, 11, 12, 13],
            positions: [8, 9, 9, 10],
            bias: treeAttentionBias(8, parents),
            rows: range(4),
          });
          runs.push([a, b]);
          await r.release();
        }
        const [plain, ...others] = runs as [Float32Array[], ...Float32Array[][]];
        for (const other of others) {
          expect(maxDiff(plain[0] as Float32Array, other[0] as Float32Array)).toBeLessThan(2e-5);
          expect(maxDiff(plain[1] as Float32Array, other[1] as Float32Array)).toBeLessThan(2e-5);
        }
      });
    }
  }

  it('fp16 compute stays close to fp32 in the fused graph', async () => {
    const { model } = randomModel({}, 'F16');
    const out: Float32Array[] = [];
    for (const precision of ['fp32', 'fp16'] as const) {
      const r = await ModelRunner.create(ort, model, { device: 'wasm', precision, graph: 'fused' });
      out.push(await r.forward({ ...prefill, rows: range(PROMPT.length) }));
      await r.release();
    }
    expect(maxDiff(out[0] as Float32Array, out[1] as Float32Array)).toBeLessThan(2e-2);
  });
});

describe('tree calls equal their paths run alone; compaction keeps the accepted slots (wasm EP)', () => {
  const cases: [string, Omit<RunnerOptions, 'device'>, Record<string, unknown>][] = [
    ['fused, fp32', { graph: 'fused', precision: 'fp32' }, {}],
    [
      'fused, fp32, qwen2 with one KV head',
      { graph: 'fused', precision: 'fp32' },
      { model_type: 'qwen2', num_key_value_heads: 1 },
    ],
    ['hybrid, fp32, qwen2', { graph: 'hybrid', precision: 'fp32' }, { model_type: 'qwen2' }],
    ['plain, int4', { graph: 'plain', precision: 'int4' }, {}],
    ['fused, int4 with zero points', { graph: 'fused', precision: 'int4', int4: { zeroPoints: true } }, {}],
  ];
  for (const [name, options, overrides] of cases) {
    it(name, async () => {
      const { model } = randomModel(overrides);
      const report = await checkTreeConsistency(ort, model, 'wasm', PROMPT, { runner: options });
      expect(report.variant).toBe(options.graph);
      expect(report.logitsDiff).toBeLessThan(1e-5);
      expect(report.cacheDiff).toBeLessThan(1e-5);
      expect(report.compactionExact).toBe(true);
      expect(report.compactionDiff).toBeLessThan(1e-5);
      expect(report.treeArgmax).toEqual(report.plainArgmax);
    });
  }
});

describe('argmax in the graph', () => {
  for (const options of [
    { graph: 'plain', precision: 'fp32' },
    { graph: 'fused', precision: 'int4' },
  ] as const) {
    it(`forwardArgmax returns the argmax of the rows forward returns, and reads 8 bytes a row (${options.graph}, ${options.precision})`, async () => {
      const { model } = randomModel();
      const V = model.config.vocabSize;
      const a = await ModelRunner.create(ort, model, { device: 'wasm', ...options });
      const b = await ModelRunner.create(ort, model, { device: 'wasm', ...options });
      const rows = [6, 2, 4];
      const logits = await a.forward({ ...prefill, rows });
      const ids = await b.forwardArgmax({ ...prefill, rows });
      expect(Array.from(ids)).toEqual(argmaxRows(logits, V));
      expect(a.bytesRead).toBe(rows.length * V * 4);
      expect(b.bytesRead).toBe(rows.length * 8);
      // The cache advanced the same way: the next call agrees too.
      const next = { tokens: [9], positions: [7], bias: chainBias(7, 1), rows: [0] };
      expect(Array.from(await b.forwardArgmax(next))).toEqual(argmaxRows(await a.forward(next), V));
      await a.release();
      await b.release();
    });
  }
});

describe('top k in the graph', () => {
  for (const options of [
    { graph: 'plain', precision: 'fp32' },
    { graph: 'fused', precision: 'int4' },
  ] as const) {
    it(`forwardTopK returns each row's k largest logits and their ids, and reads 12k bytes a row (${options.graph}, ${options.precision})`, async () => {
      const { model } = randomModel();
      const V = model.config.vocabSize;
      const a = await ModelRunner.create(ort, model, { device: 'wasm', ...options });
      const b = await ModelRunner.create(ort, model, { device: 'wasm', ...options });
      const rows = [6, 2, 4];
      const k = 7;
      const logits = await a.forward({ ...prefill, rows });
      const top = await b.forwardTopK({ ...prefill, rows }, k);
      expect(top.k).toBe(k);
      for (let r = 0; r < rows.length; r++) {
        const row = logits.subarray(r * V, (r + 1) * V);
        const want = Array.from(row.keys()).sort((x, y) => (row[y] as number) - (row[x] as number) || x - y);
        expect(Array.from(top.ids.subarray(r * k, (r + 1) * k))).toEqual(want.slice(0, k));
        expect(Array.from(top.values.subarray(r * k, (r + 1) * k))).toEqual(want.slice(0, k).map((i) => row[i]));
      }
      expect(b.bytesRead).toBe(rows.length * k * 12);
      // The cache advanced the same way; a plain call after a top-k call (top_k not fed) still works.
      const next = { tokens: [9], positions: [7], bias: chainBias(7, 1), rows: [0] };
      expect(Array.from(await b.forward(next))).toEqual(Array.from(await a.forward(next)));
      await expect(
        b.forwardTopK({ ...next, tokens: [1], positions: [8], bias: chainBias(8, 1) }, V + 1),
      ).rejects.toThrow(/k \d+ is not in \[1, \d+\]/);
      await a.release();
      await b.release();
    });
  }
});

describe("graph 'auto'", () => {
  const FP32 = { weights: 'float', compute: 'fp32', rowInvariant: false } as const;

  it('on wasm takes the hybrid graph without measuring: no probe built, nothing timed or stored', async () => {
    const { model } = randomModel();
    const { records, memory } = visibleStore();
    forgetVariantChoices();
    const steps: string[] = [];
    const r = await ModelRunner.create(ort, model, {
      device: 'wasm',
      graph: 'auto',
      variantMemory: memory,
      onProgress: (p) => {
        if (p.status === 'building' && p.file) steps.push(p.file);
      },
    });
    expect(r.variant).toBe('hybrid');
    expect(r.variantTimings).toEqual([]);
    expect(steps).toEqual([]);
    expect([...records.keys()]).toEqual([]);
    await r.release();
  });

  it('measureVariants (what WebGPU runs) times every variant on the first layers and keeps the faster', async () => {
    const { model } = randomModel();
    forgetVariantChoices();
    const choice = await measureVariants(ort, model, 'wasm', FP32);
    expect(choice.timings.map((t) => t.variant)).toEqual(['fused', 'hybrid', 'plain']);
    for (const t of choice.timings) expect(t.q1).toBeGreaterThan(0);
    const best = [...choice.timings].sort((x, y) => x.q1 + x.q16 - (y.q1 + y.q16))[0];
    expect(choice.variant).toBe(best?.variant);
  });

  it('a choice remembered in the store is used, so a fresh process builds without measuring', async () => {
    const { model } = randomModel({ hidden_size: 48, intermediate_size: 96 });
    const { records, memory } = visibleStore();
    forgetVariantChoices();
    const measured = await measureVariants(ort, model, 'wasm', FP32, 'float16', memory);
    const [key] = [...records.keys()];
    expect(key).toMatch(/^graph-variant:/);
    // Another process: nothing in memory here, the store says "fused" (whatever was measured), and it is used, by
    // measureVariants and by a runner on wasm (a choice measured there by an earlier version is kept).
    forgetVariantChoices();
    const other = measured.variant === 'fused' ? 'plain' : 'fused';
    records.set(key as string, { ...(records.get(key as string) as object), variant: other });
    expect((await measureVariants(ort, model, 'wasm', FP32, 'float16', memory)).variant).toBe(other);
    forgetVariantChoices();
    const second = await ModelRunner.create(ort, model, { device: 'wasm', graph: 'auto', variantMemory: memory });
    expect(second.variant).toBe(other);
    await second.release();
    // A record that is not a choice is measured again (and overwritten); the runner on wasm takes hybrid.
    forgetVariantChoices();
    records.set(key as string, { variant: 'mystery' });
    const third = await ModelRunner.create(ort, model, { device: 'wasm', graph: 'auto', variantMemory: memory });
    expect(third.variant).toBe('hybrid');
    await third.release();
    forgetVariantChoices();
    const again = await measureVariants(ort, model, 'wasm', FP32, 'float16', memory);
    expect((records.get(key as string) as { variant: string }).variant).toBe(again.variant);
    // Nor a choice whose timings were cut short or edited (the runner read them and threw, on every load).
    forgetVariantChoices();
    records.set(key as string, { variant: other, timings: [null] });
    await measureVariants(ort, model, 'wasm', FP32, 'float16', memory);
    const rewritten = records.get(key as string) as { timings: unknown[] };
    expect(rewritten.timings.length).toBeGreaterThan(1);
    expect(rewritten.timings.every((t) => t !== null)).toBe(true);
  });
});
