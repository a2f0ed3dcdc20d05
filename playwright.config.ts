import { defineConfig } from '@playwright/test';
import { BASE_ARGS, CHROMIUM_PATH, PORT, SEED_STATE, TEST_JS_FLAGS, WEBGPU_ARGS } from './e2e/chromium';

export default defineConfig({
  testDir: 'e2e',
  workers: 1,
  timeout: 120_000,
  expect: { timeout: 60_000 },
  reporter: process.env.CI ? [['list']] : [['list'], ['html', { open: 'never' }]],
  webServer: {
    // The production build, served statically: what users get.
    command: `npm run build --silent && npx vite preview --host 127.0.0.1 --port ${PORT} --strictPort`,
    url: `http://127.0.0.1:${PORT}/`,
    // A server already on the port would be tested instead of this checkout's build (a stale one once made the
    // package tests fail on a clone that was never built): reuse it only when asked.
    reuseExistingServer: process.env.E2E_REUSE_SERVER === '1',
    timeout: 180_000,
  },
  use: {
    baseURL: `http://127.0.0.1:${PORT}/`,
    browserName: 'chromium',
    headless: true,
  },
  projects: [
    {
      // A first visit on wasm and WebGPU whose remembered records (graph variants, costs) the webgpu tests start from.
      name: 'seed',
      testMatch: /seed\.setup\.ts/,
      use: { launchOptions: { executablePath: CHROMIUM_PATH, args: [...WEBGPU_ARGS, TEST_JS_FLAGS] } },
    },
    {
      name: 'webgpu',
      testIgnore: /no-webgpu.*\.spec\.ts/,
      dependencies: ['seed'],
      use: {
        launchOptions: { executablePath: CHROMIUM_PATH, args: [...WEBGPU_ARGS, TEST_JS_FLAGS] },
        storageState: SEED_STATE,
      },
    },
    {
      name: 'no-webgpu',
      testMatch: /no-webgpu.*\.spec\.ts/,
      use: { launchOptions: { executablePath: CHROMIUM_PATH, args: [...BASE_ARGS, TEST_JS_FLAGS] } },
    },
  ],
});
