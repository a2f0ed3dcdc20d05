/**
 * How we launch Chromium for the browser tests (facts measured in ../shared/reference/webgpu-headless.md):
 * Debian's /usr/bin/chromium, the quiet flags our closed network needs, and --enable-unsafe-webgpu, the one flag that
 * gives a (SwiftShader) WebGPU adapter headless. Never add --enable-gpu.
 */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export const BASE_ARGS = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

export const WEBGPU_ARGS = [...BASE_ARGS, '--enable-unsafe-webgpu'];

/** The adapter architecture the WebGPU tests expect: SwiftShader on our CPU-only machines. */
export const EXPECTED_ADAPTER = process.env.EXPECT_ADAPTER ?? 'swiftshader';

/**
 * The port the tests' own build is served on: not the demo's (`npm start` serves on 4173), so a demo left running is
 * never mistaken for the build under test (playwright.config.ts reuses a running server only when asked).
 */
export const PORT = Number(process.env.E2E_PORT ?? 4174);
