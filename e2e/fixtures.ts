/**
 * The fixture every browser test uses: a page whose console and errors are watched. The test fails on any console
 * message containing "WebGPU validation error" (the JSEP build hides failures there) and on any uncaught error, in
 * the page or in its workers. `adapterArchitecture()` reads the page's WebGPU adapter.
 */
import { test as base, expect, type Page } from '@playwright/test';
import { EXPECTED_ADAPTER } from './chromium';

export { expect };

/** Collects the messages that must fail a test. Exported so a negative control can prove it sees them. */
export function watchPage(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (msg) => {
    const text = msg.text();
    if (text.includes('WebGPU validation error')) problems.push(`console: ${text}`);
    else if (msg.type() === 'error' && /\bUncaught\b/.test(text)) problems.push(`uncaught (console): ${text}`);
  });
  page.on('pageerror', (err) => problems.push(`uncaught: ${err.message}`));
  return problems;
}

export async function adapterArchitecture(page: Page): Promise<string | null> {
  return page.evaluate(async () => {
    const adapter = await navigator.gpu?.requestAdapter();
    return adapter ? adapter.info.architecture : null;
  });
}

export const test = base.extend<{
  /** Asserts the page has a WebGPU adapter of the expected architecture (EXPECT_ADAPTER, default swiftshader). */
  expectWebGpuAdapter: () => Promise<void>;
}>({
  page: async ({ page }, use) => {
    const problems = watchPage(page);
    await use(page);
    expect(problems, 'WebGPU validation errors or uncaught errors during the test').toEqual([]);
  },
  expectWebGpuAdapter: async ({ page }, use) => {
    await use(async () => {
      expect(await adapterArchitecture(page)).toBe(EXPECTED_ADAPTER);
    });
  },
});
