import { expect, test } from './fixtures';

// The fixture fails a test on any console error or failed request; these loads must be clean on their own (a
// missing favicon used to log a 404 on every page).
for (const path of ['./', './embed.html', './bench.html']) {
  test(`${path} loads with no console errors and no failed requests`, async ({ page }) => {
    await page.goto(path);
    await page.waitForLoadState('networkidle');
    await expect(page.locator('link[rel="icon"]')).toHaveCount(1);
    const icon = await page.locator('link[rel="icon"]').evaluate((l) => (l as HTMLLinkElement).href);
    expect((await page.request.get(icon)).status()).toBe(200);
  });
}
