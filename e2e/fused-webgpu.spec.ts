import type { TreeCheckReport } from '../src/diagnostics/tree-check';
import { expect, test } from './fixtures';

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
    await page.locator('details.diagnostics > summary').click();
    await page.getByTestId('tree-device').selectOption('webgpu');
    await page.getByTestId('tree-models').selectOption('draft');
    await page.getByTestId('tree-graph').selectOption(graph);
    await page.getByTestId('tree-precision').selectOption(precision);
    await page.getByTestId('tree-run').click();
    await expect(page.locator('body')).toHaveAttribute('data-treecheck', /done|error/, { timeout: 220_000 });
    const text = await page.getByTestId('tree-result').textContent();
    const reports = await page.evaluate(
      () => (window as unknown as { treeCheckReports?: TreeCheckReport[] }).treeCheckReports,
    );
    expect(reports, text ?? '').toBeDefined();
    const r = reports?.[0] as TreeCheckReport;
    expect([r.device, r.variant, r.precision]).toEqual(['webgpu', graph, precision]);
    expect(r.logitsDiff, text ?? '').toBeLessThan(1e-4);
    expect(r.cacheDiff).toBeLessThan(1e-4);
    expect(r.compactionExact).toBe(true);
    expect(r.compactionDiff).toBeLessThan(1e-4);
    expect(r.treeArgmax).toEqual(r.plainArgmax);
  });
}
