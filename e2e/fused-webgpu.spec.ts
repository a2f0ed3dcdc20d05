import type { Page } from '@playwright/test';
import type { TreeCheckReport } from '../src/diagnostics/tree-check';
import { expect, test } from './fixtures';
import { type PageTreeCheck, runPageTreeCheck } from './tree-check-page';

/**
 * Int4 weights (MatMulNBits) and the graph variants on the WebGPU EP, through the page's tree check. With the plain
 * graph a tree call equals its paths run alone and compaction is exact. The fused graph (GroupQueryAttention with
 * the tree's attention_bias) computes calls of 32 tokens or more wrongly on SwiftShader's 4-wide subgroups, so asked
 * for by name it is refused at load, in one line naming the model (on an adapter where it computes right, it runs
 * the check like the others). The bundled draft (1 layer) keeps SwiftShader's time short.
 */
/** The page's tree check on WebGPU with the bundled draft model, as a user runs it. */
async function webGpuTreeCheck(
  page: Page,
  expectWebGpuAdapter: () => Promise<void>,
  options: Pick<PageTreeCheck, 'graph' | 'precision' | 'failing'>,
) {
  test.setTimeout(240_000);
  await page.goto('./');
  await expectWebGpuAdapter();
  return runPageTreeCheck(page, { device: 'webgpu', models: 'draft', timeout: 220_000, ...options });
}

for (const precision of ['fp32', 'int4'] as const) {
  test(`the fused graph with ${precision} weights is refused where it computes wrong results`, async ({
    page,
    expectWebGpuAdapter,
  }) => {
    const { text } = await webGpuTreeCheck(page, expectWebGpuAdapter, { graph: 'fused', precision, failing: true });
    expect(text).toMatch(
      /^self-test worker failed: models\/austen-draft\/: the fused graph computes wrong results on this WebGPU adapter \(a 72-token tree call is off the plain graph's by [0-9.e-]+\); load with graph 'auto' [^\n]*$/,
    );
  });
}

test('the plain graph with int4 weights verifies a token tree in one WebGPU call', async ({
  page,
  expectWebGpuAdapter,
}) => {
  const { reports, text } = await webGpuTreeCheck(page, expectWebGpuAdapter, { graph: 'plain', precision: 'int4' });
  const r = reports[0] as TreeCheckReport;
  expect([r.device, r.variant, r.precision]).toEqual(['webgpu', 'plain', 'int4']);
  expect(r.logitsDiff, text).toBeLessThan(1e-4);
  expect(r.cacheDiff).toBeLessThan(1e-4);
  expect(r.compactionExact).toBe(true);
  expect(r.compactionDiff).toBeLessThan(1e-4);
  expect(r.treeArgmax).toEqual(r.plainArgmax);
});
