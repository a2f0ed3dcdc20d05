/**
 * The fixture every browser test uses: a page whose console, requests and errors are watched. The test fails on any
 * console error (a WebGPU validation error, a library's log line, a failed resource load such as a missing
 * favicon), on any "WebGPU validation error" whatever its level (the JSEP build hides failures there), on any HTTP
 * response of 400 or more, and on any uncaught error, in the page or in its workers. A test that provokes an
 * error on purpose names it with `allowProblems(/pattern/)`. `expectWebGpuAdapter()` checks the page's adapter.
 */
import { test as base, expect, type Page } from '@playwright/test';
import { EXPECTED_ADAPTER } from './chromium';

export { expect };

/** Collects the messages that must fail a test. Exported so a negative control can prove it sees them. */
export function watchPage(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (msg) => {
    const text = msg.text();
    const where = msg.location().url;
    if (text.includes('WebGPU validation error')) problems.push(`console: ${text}`);
    else if (msg.type() === 'error' && /\bUncaught\b/.test(text)) problems.push(`uncaught (console): ${text}`);
    else if (msg.type() === 'error') problems.push(`console.error: ${text}${where ? ` (${where})` : ''}`);
  });
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`HTTP ${response.status()}: ${response.url()}`);
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
  /** Problems this test provokes on purpose (matched against the problem's text); everything else fails it. */
  allowProblems: (pattern: RegExp) => void;
  allowed: RegExp[];
}>({
  // biome-ignore lint/correctness/noEmptyPattern: Playwright fixtures destructure their first argument
  allowed: async ({}, use) => {
    await use([]);
  },
  allowProblems: async ({ allowed }, use) => {
    await use((pattern) => {
      allowed.push(pattern);
    });
  },
  page: async ({ page, allowed }, use) => {
    const problems = watchPage(page);
    await use(page);
    const unexpected = problems.filter((p) => !allowed.some((a) => a.test(p)));
    expect(unexpected, 'console errors, failed requests or uncaught errors during the test').toEqual([]);
  },
  expectWebGpuAdapter: async ({ page }, use) => {
    await use(async () => {
      expect(await adapterArchitecture(page)).toBe(EXPECTED_ADAPTER);
    });
  },
});

/**
 * One page for a whole spec file whose tests run in order and share what the page loaded (the models load once):
 * `open` sets it up; after every test its watched problems must be none; it closes at the end. The returned object's
 * `page` and `problems` are set before the first test.
 */
export function sharedPage(open: (page: Page) => Promise<void>): { page: Page; problems: string[] } {
  const shared = { page: undefined as unknown as Page, problems: [] as string[] };
  test.describe.configure({ mode: 'serial' });
  test.beforeAll(async ({ browser }) => {
    shared.page = await browser.newPage();
    shared.problems = watchPage(shared.page);
    await open(shared.page);
  });
  test.afterEach(() => {
    expect(shared.problems, 'console errors, failed requests or uncaught errors').toEqual([]);
  });
  test.afterAll(async () => {
    await shared.page.close();
  });
  return shared;
}

/**
 * Serve `body` as an HTML page at `path` (a glob), cross-origin isolated as the build's own pages are (wasm threads
 * need it): a host page that knows nothing of this project but what it loads.
 */
export async function serveHostPage(page: Page, path: string, body: string): Promise<void> {
  await page.route(path, (route) =>
    route.fulfill({
      body,
      contentType: 'text/html',
      headers: { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' },
    }),
  );
}
