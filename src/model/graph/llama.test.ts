import { describe, expect, it } from 'vitest';
import { checkTreeConsistency, type TreeCheckOptions } from '../../diagnostics/tree-check';
import { chainBias } from '../../engine/tree';
import { ortForNode } from '../../runtime/ort-node';
import { maxDiff } from '../../util/max-diff';
import type { LoadedModel } from '../load';
import { ModelRunner } from '../runner';
import { parseSafetensors, writeSafetensors } from '../safetensors';
import { type RandomModel, randomModel } from '../testing/random-model';
import { referenceForward } from '../testing/reference-llama';
import { buildLlamaGraph } from './llama';

const ort = ortForNode();

const causal = (i: number, j: number) => j <= i;
const PROMPT = [3, 17, 42, 8, 25, 60, 1];

async function prefillLogits(
  variant: Record<string, unknown>,
  dtype: 'F32' | 'F16' | 'BF16',
  graph: 'plain' | 'fused' | 'hybrid',
) {
  const { model, weights } = randomModel(variant, dtype);
  const runner = await ModelRunner.create(ort, model, { device: 'wasm', graph });
  const q = PROMPT.length;
  const logits = await runner.forward({
    tokens: PROMPT,
    positions: PROMPT.map((_, i) => i),
    bias: chainBias(0, PROMPT.length),
    rows: PROMPT.map((_, i) => i),
  });
  const ref = referenceForward(
    model.config,
    weights,
    PROMPT,
    PROMPT.map((_, i) => i),
    causal,
  );
  await runner.release();
  return { logits, ref: ref.flatMap((r) => Array.from(r)), q };
}

for (const graph of ['plain', 'fused', 'hybrid'] as const) {
  describe(`Llama graph (${graph}) vs an independent float64 reference (wasm EP)`, () => {
    const variants: [string, Record<string, unknown>, 'F32' | 'F16' | 'BF16'][] = [
      ['llama, GQA, tied embeddings, F32', {}, 'F32'],
      ['llama, F16 weights', {}, 'F16'],
      ['llama, BF16 weights', {}, 'BF16'],
      ['llama, untied lm_head', { tie_word_embeddings: false }, 'F32'],
      ['qwen2 (q/k/v bias)', { model_type: 'qwen2' }, 'F32'],
      [
        'llama3 rope scaling',
        {
          rope_scaling: {
            rope_type: 'llama3',
            factor: 8,
            low_freq_factor: 1,
            high_freq_factor: 4,
            original_max_position_embeddings: 16,
          },
        },
        'F32',
      ],
      ['linear rope scaling, no GQA', { rope_scaling: { type: 'linear', factor: 2 }, num_key_value_heads: 4 }, 'F32'],
      ['multi-query (1 KV head), explicit head_dim', { num_key_value_heads: 1, head_dim: 16 }, 'F32'],
    ];
    for (const [name, variant, dtype] of variants) {
      it(`prefill logits match: ${name}`, async () => {
        const { logits, ref } = await prefillLogits(variant, dtype, graph);
        expect(maxDiff(logits, ref)).toBeLessThan(1e-4);
      });
    }

    it('returns only the requested rows, in the requested order', async () => {
      const { model, weights } = randomModel();
      const runner = await ModelRunner.create(ort, model, { device: 'wasm', graph });
      const V = model.config.vocabSize;
      const logits = await runner.forward({
        tokens: PROMPT,
        positions: PROMPT.map((_, i) => i),
        bias: chainBias(0, PROMPT.length),
        rows: [6, 2],
      });
      const ref = referenceForward(
        model.config,
        weights,
        PROMPT,
        PROMPT.map((_, i) => i),
        causal,
      );
      expect(logits.length).toBe(2 * V);
      expect(maxDiff(logits.subarray(0, V), ref[6] as Float64Array)).toBeLessThan(1e-4);
      expect(maxDiff(logits.subarray(V), ref[2] as Float64Array)).toBeLessThan(1e-4);
      await runner.release();
    });
  });
}

describe('tree calls and cache compaction (wasm EP)', () => {
  for (const variant of [{}, { model_type: 'qwen2', num_key_value_heads: 1 }]) {
    it(`a tree call equals each root-to-node path run as a plain sequence; compaction keeps the accepted slots (${JSON.stringify(variant)})`, async () => {
      const { model } = randomModel(variant);
      const report = await checkTreeConsistency(ort, model, 'wasm', PROMPT);
      expect(report.logitsDiff).toBeLessThan(1e-5);
      expect(report.cacheDiff).toBeLessThan(1e-5);
      expect(report.compactionExact).toBe(true);
      expect(report.compactionDiff).toBeLessThan(1e-5);
      expect(report.treeArgmax).toEqual(report.plainArgmax);
    });
  }

  it('the check can fail: the checker itself reports a runner whose compaction is skipped', async () => {
    const { model } = randomModel();
    // Compaction skipped: instead of gathering the accepted slots, the cache is simply cut to the same length.
    const skipping: NonNullable<TreeCheckOptions['createRunner']> = async (o, m, device) => {
      const runner = await ModelRunner.create(o, m, { device });
      const keep = runner.keep.bind(runner);
      runner.keep = (indices) => keep(Array.from({ length: Array.from(indices).length }, (_, i) => i));
      return runner;
    };
    const report = await checkTreeConsistency(ort, model, 'wasm', PROMPT, { createRunner: skipping });
    expect(report.logitsDiff).toBeLessThan(1e-5); // the tree call itself is right
    expect(report.compactionExact).toBe(false);
    expect(report.compactionDiff).toBeGreaterThan(1e-3);
  });

  it('two keeps before a call compose (indices of the second are into the cache the first leaves)', async () => {
    const { model } = randomModel();
    const a = await ModelRunner.create(ort, model, { device: 'wasm' });
    const b = await ModelRunner.create(ort, model, { device: 'wasm' });
    const prefill = {
      tokens: PROMPT,
      positions: PROMPT.map((_, i) => i),
      bias: chainBias(0, PROMPT.length),
      rows: [0],
    };
    await a.forward(prefill);
    await b.forward(prefill);
    a.keep([0, 1, 3, 4, 6]);
    a.keep([0, 2, 4]);
    expect(a.length).toBe(3);
    b.keep([0, 3, 6]);
    const next = { tokens: [5], positions: [3], bias: chainBias(3, 1), rows: [0] };
    expect(maxDiff(await a.forward(next), await b.forward(next))).toBe(0);
    expect(() => a.keep([9])).toThrow(/outside the cache/);
    await a.release();
    await b.release();
  });

  it('fp16 compute stays close to fp32 (tested on wasm)', async () => {
    const { model } = randomModel({}, 'F16');
    const fp32 = await ModelRunner.create(ort, model, { device: 'wasm', compute: 'fp32' });
    const fp16 = await ModelRunner.create(ort, model, { device: 'wasm', compute: 'fp16' });
    const input = {
      tokens: PROMPT,
      positions: PROMPT.map((_, i) => i),
      bias: chainBias(0, PROMPT.length),
      rows: PROMPT.map((_, i) => i),
    };
    const a = await fp32.forward(input);
    const b = await fp16.forward(input);
    expect(maxDiff(a, b)).toBeLessThan(2e-2);
    await fp32.release();
    await fp16.release();
  });
});

describe('fp16 checkpoints in an fp32 graph on the wasm EP (folded Casts)', () => {
  /** The same model with its fp16 values stored as fp32: what the folded graph must compute with, bit for bit. */
  function storedAsF32(rm: RandomModel): LoadedModel {
    const tensors = [...rm.model.weights.values()].map((t) => ({
      name: t.name,
      dtype: 'F32' as const,
      shape: t.shape,
      data: new Uint8Array(rm.weights(t.name).buffer),
    }));
    const bytes = writeSafetensors(tensors);
    const parsed = parseSafetensors('model.safetensors', bytes);
    return {
      ...rm.model,
      spec: `${rm.model.spec}-as-f32`,
      weights: parsed.tensors,
      files: new Map([['model.safetensors', bytes]]),
    };
  }

  for (const graph of ['plain', 'fused', 'hybrid'] as const) {
    it(`hands onnxruntime the checkpoint's fp16 bytes, nothing converted in JavaScript (${graph} graph)`, () => {
      const { model } = randomModel({ model_type: 'qwen2' }, 'F16');
      const build = (foldHalfWeights: boolean) =>
        buildLlamaGraph(model.config, model.weights, model.files, { compute: 'fp32', variant: graph, foldHalfWeights });
      const converted = build(false);
      const folded = build(true);
      expect(converted.convertedBytes).toBeGreaterThan(0);
      expect(folded.convertedBytes).toBe(0);
      expect(folded.externalData.map((e) => e.path)).toEqual(['model.safetensors']);
    });

    it(`computes what the same weights stored as fp32 compute, bit for bit (${graph} graph)`, async () => {
      const rm = randomModel({ model_type: 'qwen2' }, 'F16');
      const half = await ModelRunner.create(ort, rm.model, { device: 'wasm', graph });
      const full = await ModelRunner.create(ort, storedAsF32(rm), { device: 'wasm', graph });
      const prefill = {
        tokens: PROMPT,
        positions: PROMPT.map((_, i) => i),
        bias: chainBias(0, PROMPT.length),
        rows: PROMPT.map((_, i) => i),
      };
      expect(maxDiff(await half.forward(prefill), await full.forward(prefill))).toBe(0);
      const tree = { tokens: [5, 9, 11], positions: [7, 8, 8], bias: chainBias(7, 3), rows: [0, 1, 2] };
      expect(maxDiff(await half.forward(tree), await full.forward(tree))).toBe(0);
      await half.release();
      await full.release();
    });
  }
});
