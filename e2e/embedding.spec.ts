/**
 * Embedding the element under a host page's constraints: a strict Content-Security-Policy (no inline styles: the
 * stats bars and the tree's drafter colours are set from script, not in style attributes), and the library loaded
 * twice on one page (its elements are defined once, the second copy loads without an error).
 */
import type { Page } from '@playwright/test';
import { expect, test } from './fixtures';

const CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self' blob:; style-src 'self'";

/** The page served with `CSP` as its Content-Security-Policy header. */
async function withCsp(page: Page): Promise<void> {
  await page.route(
    (url) => url.pathname === '/' || url.pathname.endsWith('/index.html'),
    async (route) => {
      const response = await route.fetch();
      await route.fulfill({ response, headers: { ...response.headers(), 'content-security-policy': CSP } });
    },
  );
}

test('under a strict Content-Security-Policy the element generates, and its acceptance bars have height', async ({
  page,
}) => {
  await withCsp(page);
  await page.goto('./');
  const heights = await page.evaluate(async () => {
    const el = document.querySelector('spec-decoder') as HTMLElement & {
      updateComplete: Promise<boolean>;
      generate(): Promise<unknown>;
    };
    Object.assign(el, { method: 'chain', device: 'wasm', temperature: 0, maxNewTokens: 16, prompt: 'It is a truth' });
    await el.updateComplete;
    await el.generate();
    await el.updateComplete;
    const panel = el.shadowRoot?.querySelector('sd-stats-panel') as
      | (HTMLElement & { updateComplete: Promise<boolean> })
      | null;
    await panel?.updateComplete;
    return [...(panel?.shadowRoot?.querySelectorAll('.bar') ?? [])].map((b) => b.getBoundingClientRect().height);
  });
  expect(heights.length).toBeGreaterThan(0);
  expect(Math.min(...heights)).toBeGreaterThan(0);
});

test('the library loaded a second time on the page keeps the first definitions and loads without an error', async ({
  page,
}) => {
  await page.goto('./');
  const outcome = await page.evaluate(async () => {
    const src = (document.querySelector('script[type="module"][src]') as HTMLScriptElement).src;
    try {
      await import(`${src}?second-copy`);
      return 'loaded';
    } catch (e) {
      return (e as Error).message;
    }
  });
  expect(outcome).toBe('loaded');
  expect(await page.evaluate(() => customElements.get('spec-decoder') !== undefined)).toBe(true);
});
