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

/**
 * The browser tests' own flag on top: V8 runs onnxruntime's wasm with its baseline compiler (Liftoff) only, as the
 * engine does in Node (src/runtime/ort-node-webgpu.ts). Tier-up compiles the 27 MB module again with TurboFan in
 * the background of every fresh context, on the same two cores as the load: a first load on the page took 19.7 s on
 * wasm and 64.8 s on SwiftShader with it, 11.4 and 47.0 s without (2026-11-29, Chromium 156 and 150 alike). The
 * results are the same; the bench keeps V8's defaults (WEBGPU_ARGS), which are what users run.
 */
export const TEST_JS_FLAGS = '--js-flags=--liftoff-only';

/** The adapter architecture the WebGPU tests expect: SwiftShader on our CPU-only machines. */
export const EXPECTED_ADAPTER = process.env.EXPECT_ADAPTER ?? 'swiftshader';

/**
 * The port the tests' own build is served on: not the demo's (`npm start` serves on 4173), so a demo left running is
 * never mistaken for the build under test (playwright.config.ts reuses a running server only when asked).
 */
export const PORT = Number(process.env.E2E_PORT ?? 4174);

/**
 * The storage the webgpu project's tests start from: what a first visit remembered (e2e/seed.setup.ts). Git-ignored,
 * written on every run.
 */
export const SEED_STATE = 'test-results/.seed/state.json';
