import type { SelftestReport } from '../src/diagnostics/selftest-protocol';
import { EXPECTED_ADAPTER } from './chromium';
import { expect, test, watchPage } from './fixtures';

test('the page names the WebGPU adapter', async ({ page, expectWebGpuAdapter }) => {
  await page.goto('./');
  await expectWebGpuAdapter();
  await expect(page.getByTestId('adapter-status')).toContainText(EXPECTED_ADAPTER);
  expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
});

test('a module worker runs MatMul + Softmax on the webgpu EP alone, equal to wasm within 1e-5', async ({
  page,
  expectWebGpuAdapter,
}) => {
  const ortRequests: string[] = [];
  page.on('request', (req) => {
    if (/ort-wasm/.test(req.url())) ortRequests.push(req.url());
  });
  await page.goto('./');
  await expectWebGpuAdapter();
  // The self-test runs when the diagnostics panel is first opened (not at page load).
  await expect(page.locator('body')).toHaveAttribute('data-selftest', 'not run');
  await page.locator('details.diagnostics summary').click();
  await expect(page.locator('body')).toHaveAttribute('data-selftest', /webgpu-ok|webgpu-failed|error/);
  const report = await page.evaluate(() => (window as unknown as { selftestReport: SelftestReport }).selftestReport);
  expect(report.webgpu.ok, JSON.stringify(report.webgpu)).toBe(true);
  expect(report.wasm.ok).toBe(true);
  // The EP's own device is the adapter we expect (not a silent wasm fallback).
  expect(report.ortDeviceArchitecture).toBe(EXPECTED_ADAPTER);
  expect(report.webgpuVsWasm).toBeLessThan(1e-5);
  expect(report.wasmVsReference).toBeLessThan(1e-5);
  // onnxruntime-web's wasm came from our own origin.
  expect(ortRequests.length).toBeGreaterThan(0);
  for (const url of ortRequests) expect(url.startsWith('http://127.0.0.1:')).toBe(true);
});

test('negative control: the fixture sees validation errors, console errors, failed requests and uncaught errors, in the page and in a worker', async ({
  browser,
}) => {
  const page = await browser.newPage();
  const problems = watchPage(page);
  await page.goto('./');
  await page.evaluate(async () => {
    console.error('synthetic console error');
    await fetch('./no-such-file.txt');
    console.warn('An uncaught WebGPU validation error was raised: (synthetic, from the page)');
    setTimeout(() => {
      throw new Error('synthetic page error');
    });
    const src =
      'console.error("An uncaught WebGPU validation error was raised: (synthetic, from a worker)"); throw new Error("synthetic worker error");';
    new Worker(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })));
  });
  // Seven problems arrive, the worker's uncaught error last and on its own schedule (once the count of six was
  // reached before it came, and the check below failed): wait for that one itself.
  await expect.poll(() => problems.join('\n')).toContain('synthetic worker error');
  expect(problems.join('\n')).toContain('console.error: synthetic console error');
  expect(problems.join('\n')).toMatch(/HTTP 404: \S*no-such-file\.txt/);
  expect(problems.join('\n')).toContain('from the page');
  expect(problems.join('\n')).toContain('from a worker');
  expect(problems.join('\n')).toContain('synthetic page error');
  expect(problems.join('\n')).toContain('synthetic worker error');
  await page.close();
});
