import type { GenerationResult } from '../src/engine/events';
import { expect, test } from './fixtures';

test('without WebGPU the element says it fell back to wasm, and still generates', async ({ page }) => {
  test.setTimeout(300_000);
  await page.goto('./');
  const el = page.locator('spec-decoder');
  await page.locator('#settings [name="max-new-tokens"]').fill('6');
  await page.evaluate(() => {
    const w = window as unknown as { done?: GenerationResult };
    document.querySelector('spec-decoder')?.addEventListener('sd-done', (e) => {
      w.done = e.detail;
    });
  });
  await el.locator('button[part="generate"]').click();
  await expect(el.locator('[part="fallback"]')).toContainText('no WebGPU adapter', { timeout: 120_000 });
  await expect
    .poll(() => page.evaluate(() => (window as unknown as { done?: GenerationResult }).done?.tokens.length), {
      timeout: 120_000,
    })
    .toBe(6);
  await expect(el.locator('[part="legend"]')).toContainText('on wasm');
});
