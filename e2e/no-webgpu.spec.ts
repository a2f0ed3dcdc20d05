import type { SelftestReport } from '../src/diagnostics/selftest-protocol';
import { adapterArchitecture, expect, test } from './fixtures';

test('without --enable-unsafe-webgpu the page says "no WebGPU adapter" and the webgpu EP fails instead of using wasm', async ({
  page,
}) => {
  await page.goto('./');
  expect(await adapterArchitecture(page)).toBeNull();
  await expect(page.getByTestId('adapter-status')).toContainText('no WebGPU adapter');
  // The self-test runs when the diagnostics panel is first opened (not at page load).
  await expect(page.locator('body')).toHaveAttribute('data-selftest', 'not run');
  await page.locator('details.diagnostics summary').click();
  await expect(page.locator('body')).toHaveAttribute('data-selftest', /webgpu-ok|webgpu-failed|error/);
  const report = await page.evaluate(() => (window as unknown as { selftestReport: SelftestReport }).selftestReport);
  expect(report.probe.ok).toBe(false);
  expect(report.webgpu.ok).toBe(false);
  expect(report.webgpu.ok ? '' : report.webgpu.error).toMatch(/adapter|webgpu/i);
  // wasm still works: the failure is WebGPU's, reported as such.
  expect(report.wasm.ok).toBe(true);
  await expect(page.locator('body')).toHaveAttribute('data-selftest', 'webgpu-failed');
});
