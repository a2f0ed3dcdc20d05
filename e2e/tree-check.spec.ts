import type { TreeCheckReport } from '../src/diagnostics/tree-check';
import { expect, test } from './fixtures';

test('both bundled models load in the browser and verify a token tree in one WebGPU call, with exact compaction', async ({
  page,
  expectWebGpuAdapter,
}) => {
  test.setTimeout(300_000);
  await page.goto('./');
  await expectWebGpuAdapter();
  await page.locator('details.diagnostics > summary').click();
  await page.getByTestId('tree-device').selectOption('webgpu');
  await page.getByTestId('tree-models').selectOption('both');
  await page.getByTestId('tree-run').click();
  await expect(page.locator('body')).toHaveAttribute('data-treecheck', /done|error/, { timeout: 280_000 });
  const text = await page.getByTestId('tree-result').textContent();
  const reports = await page.evaluate(
    () => (window as unknown as { treeCheckReports?: TreeCheckReport[] }).treeCheckReports,
  );
  expect(reports, text ?? '').toBeDefined();
  expect(reports?.map((r) => r.device)).toEqual(['webgpu', 'webgpu']);
  expect(reports?.[0]?.compute).toBe('fp32'); // SwiftShader has no shader-f16: the runner must choose fp32
  for (const r of reports ?? []) {
    expect(r.logitsDiff, r.model).toBeLessThan(1e-4);
    expect(r.cacheDiff, r.model).toBeLessThan(1e-4);
    expect(r.compactionExact, r.model).toBe(true);
    expect(r.compactionDiff, r.model).toBeLessThan(1e-4);
    expect(r.treeArgmax, r.model).toEqual(r.plainArgmax);
  }
});

test('int8 weights on wasm in the browser: both bundled models verify a token tree exactly (row-invariant attention)', async ({
  page,
}) => {
  test.setTimeout(120_000);
  await page.goto('./');
  await page.locator('details.diagnostics > summary').click();
  await page.getByTestId('tree-device').selectOption('wasm');
  await page.getByTestId('tree-models').selectOption('both');
  await page.getByTestId('tree-graph').selectOption('hybrid');
  await page.getByTestId('tree-precision').selectOption('int8');
  await page.getByTestId('tree-run').click();
  await expect(page.locator('body')).toHaveAttribute('data-treecheck', /done|error/, { timeout: 110_000 });
  const text = await page.getByTestId('tree-result').textContent();
  const reports = await page.evaluate(
    () => (window as unknown as { treeCheckReports?: TreeCheckReport[] }).treeCheckReports,
  );
  expect(reports, text ?? '').toBeDefined();
  for (const r of reports ?? []) {
    expect(r.device, r.model).toBe('wasm');
    expect(r.precision, r.model).toBe('int8');
    expect(r.logitsDiff, r.model).toBe(0);
    expect(r.cacheDiff, r.model).toBe(0);
    expect(r.compactionExact, r.model).toBe(true);
    expect(r.treeArgmax, r.model).toEqual(r.plainArgmax);
  }
});
