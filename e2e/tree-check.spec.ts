import { expect, test } from './fixtures';
import { runPageTreeCheck } from './tree-check-page';

test('both bundled models load in the browser and verify a token tree in one WebGPU call, with exact compaction', async ({
  page,
  expectWebGpuAdapter,
}) => {
  test.setTimeout(300_000);
  await page.goto('./');
  await expectWebGpuAdapter();
  const { reports } = await runPageTreeCheck(page, { device: 'webgpu', models: 'both', timeout: 280_000 });
  expect(reports.map((r) => r.device)).toEqual(['webgpu', 'webgpu']);
  expect(reports[0]?.compute).toBe('fp32'); // SwiftShader has no shader-f16: the runner must choose fp32
  for (const r of reports) {
    expect(r.logitsDiff, r.model).toBeLessThan(1e-4);
    expect(r.cacheDiff, r.model).toBeLessThan(1e-4);
    expect(r.compactionExact, r.model).toBe(true);
    expect(r.compactionDiff, r.model).toBeLessThan(1e-4);
    expect(r.treeArgmax, r.model).toEqual(r.plainArgmax);
  }
});

test('the tree check with exact decoding: on wasm the draft model passes its load check; the fused graph is refused in one line', async ({
  page,
}) => {
  test.setTimeout(120_000);
  await page.goto('./');
  const { reports, text } = await runPageTreeCheck(page, {
    device: 'wasm',
    models: 'draft',
    exact: true,
    timeout: 60_000,
  });
  expect(reports.map((r) => r.exact)).toEqual([true]);
  expect(text).toContain('exact decoding holds');
  expect(reports[0]?.logitsDiff).toBe(0);
  const refused = await runPageTreeCheck(page, {
    device: 'wasm',
    models: 'draft',
    graph: 'fused',
    exact: true,
    failing: true,
    timeout: 60_000,
  });
  expect(refused.text).toMatch(
    /^self-test worker failed: models\/austen-draft\/: exact decoding needs a graph whose attention is MatMuls[^\n]*$/,
  );
});

test('fp16 weights on wasm, picked in the diagnostics panel: the draft model verifies a token tree', async ({
  page,
}) => {
  test.setTimeout(120_000);
  await page.goto('./');
  const { reports } = await runPageTreeCheck(page, {
    device: 'wasm',
    models: 'draft',
    precision: 'fp16',
    timeout: 110_000,
  });
  expect(reports).toHaveLength(1);
  expect(reports[0]?.precision).toBe('fp16');
  expect(reports[0]?.compactionExact).toBe(true);
  expect(reports[0]?.treeArgmax).toEqual(reports[0]?.plainArgmax);
});

test('int8 weights on wasm in the browser: both bundled models verify a token tree exactly (row-invariant attention)', async ({
  page,
}) => {
  test.setTimeout(120_000);
  await page.goto('./');
  const { reports } = await runPageTreeCheck(page, {
    device: 'wasm',
    models: 'both',
    graph: 'hybrid',
    precision: 'int8',
    timeout: 110_000,
  });
  expect(reports).toHaveLength(2);
  for (const r of reports) {
    expect(r.device, r.model).toBe('wasm');
    expect(r.precision, r.model).toBe('int8');
    expect(r.logitsDiff, r.model).toBe(0);
    expect(r.cacheDiff, r.model).toBe(0);
    expect(r.compactionExact, r.model).toBe(true);
    expect(r.treeArgmax, r.model).toEqual(r.plainArgmax);
  }
});
