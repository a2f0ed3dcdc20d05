/**
 * Regenerates docs/demo.png, the README's screenshot: the built demo page after a run on the bundled pair.
 * Usage: npx vite build && node_modules/.bin/tsx tools/screenshot.ts [device] [tokens]
 */
import { spawn } from 'node:child_process';
import { chromium } from '@playwright/test';
import { CHROMIUM_PATH, WEBGPU_ARGS } from '../e2e/chromium';

const device = process.argv[2] ?? 'wasm';
const tokens = process.argv[3] ?? '48';
const port = 4185;
const server = spawn(
  'node_modules/.bin/vite',
  ['preview', '--host', '127.0.0.1', '--port', String(port), '--strictPort'],
  {
    stdio: 'ignore',
  },
);
try {
  await new Promise((r) => setTimeout(r, 2500));
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: WEBGPU_ARGS });
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  await page.goto(`http://127.0.0.1:${port}/`);
  await page.locator('#settings [name="device"]').selectOption(device);
  await page.locator('#settings [name="max-new-tokens"]').fill(tokens);
  const el = page.locator('spec-decoder');
  await el.locator('button[part="race"]').click();
  await page.locator('spec-decoder [data-stat="speedup"]').waitFor({ timeout: 600_000 });
  // Show a round with a rejection in the tree view.
  await el.evaluate((e) => {
    const host = e as HTMLElement & { events?: { tree: { status: string[] } }[] };
    const rounds = host.events ?? [];
    const pick = rounds.findIndex((r) => r.tree.status.includes('rejected') && r.tree.status.includes('accepted'));
    const slider = e.shadowRoot?.querySelector('input[type="range"]') as HTMLInputElement | null;
    if (slider && pick >= 0) {
      slider.value = String(pick);
      slider.dispatchEvent(new Event('input'));
    }
  });
  await page.waitForTimeout(300);
  await el.screenshot({ path: 'docs/demo.png' });
  await browser.close();
  console.log('wrote docs/demo.png');
} finally {
  server.kill();
}
