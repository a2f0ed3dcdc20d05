/**
 * int8 weights with activations quantised per row (MatMulIntegerToFloat) on the wasm EP: against the float64
 * reference that quantises the same way, every graph variant; tree calls against their paths run alone (the reason
 * the rows are quantised one by one); quantisation progress.
 */
import { describe, expect, it } from 'vitest';
import { checkTreeConsistency } from '../../diagnostics/tree-check';
import { chainBias } from '../../engine/tree';
import { ortForNode } from '../../runtime/ort-node';
import { maxDiff } from '../../util/max-diff';
import { ModelRunner } from '../runner';
import { int8Reference } from '../testing/quantized-reference';
import { GRAPH_TEST_MODELS, randomModel } from '../testing/random-model';
import { referenceForward } from '../testing/reference-llama';

const ort = ortForNode();
const PROMPT = [3, 17, 42, 8, 25, 60, 1];
const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const causal = (i: number, j: number) => j <= i;
const prefill = { tokens: PROMPT, positions: range(PROMPT.length), bias: chainBias(0, PROMPT.length) };

const MODELS: [string, Record<string, unknown>][] = [
  ...GRAPH_TEST_MODELS,
  // One query head per KV head: the row-invariant attention's padded path (plain-ops.ts, groupedAttention).
  ['multi-head (no grouping)', { num_key_value_heads: 4 }],
];

describe('int8 weights vs the float64 reference that quantises weights and each row of every input (wasm EP)', () => {
  for (const graph of ['plain', 'fused', 'hybrid'] as const) {
    for (const [name, overrides] of MODELS) {
      it(`${graph}: ${name}`, async () => {
        const { model, weights } = randomModel(overrides, 'BF16');
        // The fused graph's GroupQueryAttention is not row-invariant: named, it is refused unless asked to go without.
        const drift = graph === 'fused' ? { rowInvariantAttention: false } : {};
        const runner = await ModelRunner.create(ort, model, { device: 'wasm', precision: 'int8', graph, ...drift });
        expect(runner.precision).toBe('int8');
        const logits = await runner.forward({ ...prefill, rows: range(PROMPT.length) });
        const flat = (rows: Float64Array[]) => rows.flatMap((r) => Array.from(r));
        const ref = int8Reference(model.config, weights);
        const expected = referenceForward(
          ref.cfg,
          ref.weights,
          PROMPT,
          range(PROMPT.length),
          causal,
          {},
          undefined,
          ref.input,
        );
        const err = maxDiff(logits, flat(expected));
        // Not vacuous: the float model, and the int8 weights without quantised inputs, are measurably different.
        const float = maxDiff(
          logits,
          flat(referenceForward(model.config, weights, PROMPT, range(PROMPT.length), causal)),
        );
        const weightsOnly = maxDiff(
          logits,
          flat(referenceForward(ref.cfg, ref.weights, PROMPT, range(PROMPT.length), causal)),
        );
        expect(err).toBeLessThan(1e-4);
        expect(float).toBeGreaterThan(1e-2);
        expect(weightsOnly).toBeGreaterThan(1e-2);
        await runner.release();
      });
    }
  }
});

describe('int8: tree calls equal their paths run alone; compaction keeps the accepted slots (wasm EP)', () => {
  for (const graph of ['plain', 'fused'] as const) {
    it(graph, async () => {
      const { model } = randomModel({ model_type: 'qwen2' });
      const drift = graph === 'fused' ? { rowInvariantAttention: false } : {};
      const report = await checkTreeConsistency(ort, model, 'wasm', PROMPT, {
        runner: { graph, precision: 'int8', ...drift },
      });
      expect(report.precision).toBe('int8');
      expect(report.logitsDiff).toBeLessThan(1e-5);
      expect(report.cacheDiff).toBeLessThan(1e-5);
      expect(report.compactionExact).toBe(true);
      expect(report.compactionDiff).toBeLessThan(1e-5);
      expect(report.treeArgmax).toEqual(report.plainArgmax);
    });
  }
});
