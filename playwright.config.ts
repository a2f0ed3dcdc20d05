import { defineConfig } from '@playwright/test';
import { BASE_ARGS, CHROMIUM_PATH, PORT, WEBGPU_ARGS } from './e2e/chromium';

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
    reuseExistingServer: !process.env.CI,
    timeout: 180_000,
  },
  use: {
    baseURL: `http://127.0.0.1:${PORT}/`,
    browserName: 'chromium',
    headless: true,
  },
  projects: [
    {
      name: 'webgpu',
      testIgnore: /no-webgpu.*\.spec\.ts/,
      use: { launchOptions: { executablePath: CHROMIUM_PATH, args: WEBGPU_ARGS } },
    },
    {
      name: 'no-webgpu',
      testMatch: /no-webgpu.*\.spec\.ts/,
      use: { launchOptions: { executablePath: CHROMIUM_PATH, args: BASE_ARGS } },
    },
  ],
});
