/**
 * Drives the browser backends of the benchmark: builds the site, serves it, opens Chromium (Debian's, with
 * --enable-unsafe-webgpu: a SwiftShader adapter here) on bench.html, and runs the harness in a worker there.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chromium } from '@playwright/test';
import { CHROMIUM_PATH, WEBGPU_ARGS } from '../e2e/chromium';
import type { BenchOptions, BenchReport } from './harness';

const PORT = 4190;

/** Per backend: how much to run. SwiftShader WebGPU is ~70x slower than wasm, so its subset is short. */
const PLANS: Record<
  string,
  { device: 'wasm' | 'webgpu'; prompts: number; options: Omit<BenchOptions, 'prompts' | 'log'> }
> = {
  'chromium-wasm': {
    device: 'wasm',
    prompts: 8,
    options: {
      methods: ['ar', 'chain', 'tree', 'dynamic', 'adaptive'],
      maxNewTokens: 48,
      repeats: 1,
      curveQs: [1, 2, 4, 8, 16, 32, 64],
      curveReps: 5,
    },
  },
  'chromium-webgpu': {
    device: 'webgpu',
    prompts: 2,
    options: {
      methods: ['ar', 'chain', 'dynamic'],
      maxNewTokens: 12,
      repeats: 1,
      curveQs: [1, 2, 4, 8, 16],
      curveReps: 2,
    },
  },
};

async function waitForServer(url: string, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error(`the preview server did not start at ${url}`);
}

export async function runBrowserBenches(
  backends: string[],
  prompts: string[],
): Promise<{ reports: Record<string, BenchReport | { error: string }> }> {
  const build = spawnSync('node_modules/.bin/vite', ['build'], { stdio: 'inherit' });
  if (build.status !== 0) throw new Error('vite build failed');
  let server: ChildProcess | null = null;
  const reports: Record<string, BenchReport | { error: string }> = {};
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: WEBGPU_ARGS, headless: true });
  try {
    server = spawn(
      'node_modules/.bin/vite',
      ['preview', '--host', '127.0.0.1', '--port', String(PORT), '--strictPort'],
      {
        stdio: 'ignore',
      },
    );
    const url = `http://127.0.0.1:${PORT}/bench.html`;
    await waitForServer(url, 60_000);
    const page = await browser.newPage();
    page.on('console', (m) => {
      if (m.type() === 'log') console.log(`  [browser] ${m.text()}`);
    });
    await page.goto(url);
    for (const name of backends) {
      const plan = PLANS[name];
      if (!plan) {
        reports[name] = { error: `unknown backend ${name}` };
        continue;
      }
      console.log(`== ${name}`);
      const options = { ...plan.options, prompts: prompts.slice(0, plan.prompts) };
      try {
        reports[name] = await page.evaluate(
          ([device, o]) =>
            (
              window as unknown as {
                benchmark: (d: string, o: unknown, log: (l: string) => void) => Promise<BenchReport>;
              }
            ).benchmark(device, o, (l) => console.log(l)),
          [plan.device, options] as const,
        );
      } catch (e) {
        reports[name] = { error: (e as Error).message };
      }
    }
  } finally {
    await browser.close();
    server?.kill();
  }
  return { reports };
}
