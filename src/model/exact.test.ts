/**
 * Exact decoding at load (exact.ts, RunnerOptions.exact) on the wasm EP: the check tells a row-invariant graph from
 * one that is not, a runner asked to be exact is built only in a variant that passes it, and the variants that
 * cannot be row-invariant are neither probed nor accepted.
 */
import { describe, expect, it } from 'vitest';
import { ortForNode } from '../runtime/ort-node';
import { checkExact } from './exact';
import { loadModel } from './load';
import { ModelRunner } from './runner';
import { forgetVariantChoices, measureVariants } from './variant';

const ort = ortForNode(2);
const bundled = await loadModel('public/models/austen-target');

/** The load's error message, or 'built' (a runner holds the weights: too big for a failing assertion to print). */
async function loadError(options: Parameters<typeof ModelRunner.create>[2]): Promise<string> {
  return ModelRunner.create(ort, bundled, options).then(
    async (r) => {
      await r.release();
      return 'built';
    },
    (e) => (e as Error).message,
  );
}

describe('exact decoding (wasm EP, bundled target)', () => {
  it('the check passes the row-invariant attention and fails the plain formulation, whose rows differ in the last bits', async () => {
    for (const rowInvariantAttention of [true, false]) {
      const runner = await ModelRunner.create(ort, bundled, {
        device: 'wasm',
        precision: 'fp32',
        graph: 'plain',
        rowInvariantAttention,
      });
      const check = await checkExact(runner);
      expect(check.exact).toBe(rowInvariantAttention);
      if (rowInvariantAttention) expect(check).toMatchObject({ maxDiff: 0, rowsDiffering: 0, nodes: 5 });
      else {
        expect(check.rowsDiffering).toBeGreaterThan(0);
        expect(check.maxDiff).toBeGreaterThan(0);
        expect(check.maxDiff).toBeLessThan(1e-3); // last bits, not a wrong mask
      }
      expect(runner.length).toBe(0); // the check leaves the cache empty
      await runner.release();
    }
  });

  it('graph auto: an exact runner is chosen among plain and hybrid, checked, and keyed apart from the others', async () => {
    forgetVariantChoices();
    const exact = await ModelRunner.create(ort, bundled, {
      device: 'wasm',
      precision: 'fp32',
      graph: 'auto',
      exact: true,
    });
    expect(exact.exact).toBe(true);
    // On wasm the variant is known without measuring (WASM_VARIANTS): hybrid, then plain.
    expect(exact.variant).toBe('hybrid');
    expect((await checkExact(exact)).exact).toBe(true);
    const other = await ModelRunner.create(ort, bundled, { device: 'wasm', precision: 'fp32', graph: exact.variant });
    expect(other.exact).toBe(false);
    expect(exact.fingerprint).toContain('+exact');
    expect(exact.fingerprint).not.toBe(other.fingerprint);
    await exact.release();
    await other.release();
  });

  it('int8 (row-invariant by default) chooses its graph among the variants that can be', async () => {
    forgetVariantChoices();
    const runner = await ModelRunner.create(ort, bundled, { device: 'wasm', precision: 'int8', graph: 'auto' });
    expect(runner.variant).toBe('hybrid');
    expect(runner.graph.rowInvariantAttention).toBe(true);
    await runner.release();
  });

  it('a graph that cannot be exact is refused in one line naming the model, before anything is built', async () => {
    expect(await loadError({ device: 'wasm', precision: 'fp32', graph: 'fused', exact: true })).toMatch(
      /^public\/models\/austen-target: exact decoding needs a graph whose attention is MatMuls \(plain or hybrid\); the fused graph's GroupQueryAttention [^\n]*$/,
    );
    expect(
      await loadError({ device: 'wasm', precision: 'fp32', graph: 'plain', exact: true, rowInvariantAttention: false }),
    ).toMatch(/exact decoding needs the row-invariant attention/);
    // int8 is row-invariant by default: a fused graph named for it went without, and greedy speculation then differed
    // from plain decoding (9 of 36 runs of chain, dynamic and lookup).
    expect(await loadError({ device: 'wasm', precision: 'int8', graph: 'fused' })).toMatch(
      /^public\/models\/austen-target: int8 keeps speculation exact with a row-invariant attention, which needs a graph whose attention is MatMuls, and the fused graph's is GroupQueryAttention: load with graph 'auto', 'plain' or 'hybrid' \(or rowInvariantAttention: false [^\n]*\)$/,
    );
    expect(await loadError({ device: 'wasm', precision: 'fp32', graph: 'fused', rowInvariantAttention: true })).toMatch(
      /: the row-invariant attention asked for \(rowInvariantAttention\) needs a graph whose attention is MatMuls, and the fused graph's is GroupQueryAttention: load with graph 'auto', 'plain' or 'hybrid'$/,
    );
    // Asked to go without, it loads.
    const drifting = await ModelRunner.create(ort, bundled, {
      device: 'wasm',
      precision: 'int8',
      graph: 'fused',
      rowInvariantAttention: false,
    });
    expect(drifting.variant).toBe('fused');
    await drifting.release();
  });

  it('graph auto: a variant that fails the check is replaced by the next, and not built again in a later load', async () => {
    // int4 on wasm: the plain graph fails the check (MatMulNBits), the hybrid one passes. The remembered variant
    // choice is set to put plain first, so the first load must fall back.
    const memory = new Map<string, unknown>();
    const store = {
      get: async (k: string) => memory.get(k),
      set: async (k: string, v: unknown) => void memory.set(k, v),
    };
    const load = async () => {
      forgetVariantChoices();
      let builds = 0;
      const runner = await ModelRunner.create(ort, bundled, {
        device: 'wasm',
        precision: 'int4',
        graph: 'auto',
        exact: true,
        variantMemory: store,
        onProgress: (p) => {
          if (p.status === 'building' && p.file === undefined) builds++;
        },
      });
      const variant = runner.variant;
      expect(runner.exact).toBe(true);
      await runner.release();
      return { builds, variant };
    };
    // On wasm nothing is measured (WASM_VARIANTS); a choice measured and remembered earlier is still used.
    forgetVariantChoices();
    await measureVariants(
      ort,
      bundled,
      'wasm',
      { weights: 'int4', compute: 'fp32', rowInvariant: true },
      'float16',
      store,
    );
    const choiceKey = [...memory.keys()].find((k) => k.startsWith('graph-variant:')) as string;
    memory.set(choiceKey, { ...(memory.get(choiceKey) as object), variant: 'plain' });
    for (const k of [...memory.keys()]) if (k.startsWith('exact-check:')) memory.delete(k);
    expect(await load()).toEqual({ builds: 2, variant: 'hybrid' });
    expect([...memory.keys()].filter((k) => k.startsWith('exact-check:'))).toHaveLength(1);
    expect(await load()).toEqual({ builds: 1, variant: 'hybrid' });
  });

  it('where the kernels break it (int4 on the plain graph: MatMulNBits), the load fails with what the check measured', async () => {
    expect(await loadError({ device: 'wasm', precision: 'int4', graph: 'plain', exact: true })).toMatch(
      /^public\/models\/austen-target: exact decoding is not available on wasm in int4: a verify call and one-token calls give different logits here \(plain graph: [1-5] of 5 tree nodes differ, by up to [0-9.e-]+\); try with graph auto, another precision, or load without exact$/,
    );
  });
});
