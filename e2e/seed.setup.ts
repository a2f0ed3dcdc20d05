import { DB, STORE } from '../src/runtime/store-web';
import { SEED_STATE } from './chromium';
import { expect, test } from './fixtures';

/**
 * Runs before the webgpu project's tests: loads the bundled pair on wasm and on WebGPU once, as a first visit does,
 * and keeps what the engine remembered in IndexedDB (the graph variant it measured for each model on WebGPU, the
 * cost curves, the thread count) as the storage every webgpu test starts from, as a returning visitor's browser
 * would. Measuring the variants is most of a first load on SwiftShader; paid once here, not in each of some fifty
 * tests. It is a test of the first visit too: it fails unless both models' WebGPU choices were measured and stored,
 * and if wasm measured its variants (it knows them: WASM_VARIANTS in src/model/variant.ts; measuring was 7 of a
 * first visit's 13 s here).
 */
test('a first visit on wasm and on WebGPU, its remembered records kept for the other tests', async ({ page }) => {
  test.setTimeout(600_000);
  await page.goto('./');
  const settings = page.locator('#settings');
  await settings.locator('[name="max-new-tokens"]').fill('2');
  const el = page.locator('spec-decoder');
  const generate = () =>
    el.evaluate(async (e) => {
      const result = await (e as HTMLElement & { generate(): Promise<{ tokens: number[] } | null> }).generate();
      return result?.tokens.length;
    });
  await settings.locator('[name="device"]').selectOption('wasm');
  expect(await generate()).toBe(2);
  await settings.locator('[name="device"]').selectOption('webgpu');
  expect(await generate()).toBe(2);
  const records = await page.evaluate(
    ([db, store]) =>
      new Promise<string[]>((resolve, reject) => {
        const open = indexedDB.open(db);
        open.onerror = () => reject(open.error);
        open.onsuccess = () => {
          const keys = open.result.transaction(store).objectStore(store).getAllKeys();
          keys.onsuccess = () => resolve(keys.result.map(String));
          keys.onerror = () => reject(keys.error);
        };
      }),
    [DB, STORE] as const,
  );
  // Both models' WebGPU variant choices are among them, or the other tests would measure again; wasm measures none.
  const choices = records.filter((k) => k.startsWith('graph-variant:'));
  expect(choices.filter((k) => k.includes(':webgpu/')).length).toBeGreaterThanOrEqual(2);
  expect(choices.filter((k) => k.includes(':wasm/'))).toEqual([]);
  await page.context().storageState({ path: SEED_STATE, indexedDB: true });
});
