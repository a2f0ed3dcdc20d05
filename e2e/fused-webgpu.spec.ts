import type { TreeCheckReport } from '../src/diagnostics/tree-check';
import { expect, test } from './fixtures';
import { runPageTreeCheck } from './tree-check-page';

/**
 * The fused graph (GroupQueryAttention with the tree's attention_bias, RotaryEmbedding, SkipSimplifiedLayerNormalization)
 * and int4 weights (MatMulNBits) on the WebGPU EP: a tree call equals its paths run alone, compaction is exact. The
 * bundled draft (1 layer) keeps SwiftShader's time short.
 */
for (const [graph, precision] of [
  ['fused', 'fp32'],
  ['fused', 'int4'],
  ['plain', 'int4'],
] as const) {
  test(`the ${graph} graph with ${precision} weights verifies a token tree in one WebGPU call`, async ({
    page,
    expectWebGpuAdapter,
  }) => {
    test.setTimeout(240_000);
    await page.goto('./');
    await expectWebGpuAdapter();
    const { reports, text } = await runPageTreeCheck(page, {
      device: 'webgpu',
      models: 'draft',
      graph,
      precision,
      timeout: 220_000,
    });
    const r = reports[0] as TreeCheckReport;
    expect([r.device, r.variant, r.precision]).toEqual(['webgpu', graph, precision]);
    expect(r.logitsDiff, text).toBeLessThan(1e-4);
    expect(r.cacheDiff).toBeLessThan(1e-4);
    expect(r.compactionExact).toBe(true);
    expect(r.compactionDiff).toBeLessThan(1e-4);
    expect(r.treeArgmax).toEqual(r.plainArgmax);
  });
}
