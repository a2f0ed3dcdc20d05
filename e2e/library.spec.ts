import { expect, serveHostPage, test } from './fixtures';

// A host page that knows nothing of this project but the library build (dist/lib): one script tag and the tag.
const HOST = `<!doctype html><html><head><link rel="icon" href="data:,"><script type="module" src="./spec-decoder.js"></script></head><body>
<spec-decoder target="../models/austen-target/" draft="../models/austen-draft/" ort-base="./ort/" device="wasm"
  method="chain" max-new-tokens="6" prompt="She was"></spec-decoder></body></html>`;

test('the library build (ES module + worker + ort files) works from a plain host page', async ({ page }) => {
  test.setTimeout(120_000);
  await serveHostPage(page, '**/lib/host.html', HOST);
  await page.goto('./lib/host.html');
  const tokens = await page.evaluate(async () => {
    await customElements.whenDefined('spec-decoder');
    const el = document.querySelector('spec-decoder') as HTMLElement & {
      generate(): Promise<{ tokens: number[] } | null>;
    };
    return (await el.generate())?.tokens;
  });
  expect(tokens?.length).toBe(6);
  await expect(page.locator('spec-decoder sd-token-stream [data-kind]').first()).toBeVisible();
});
