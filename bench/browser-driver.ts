/**
 * Drives the browser backends of the benchmark: builds the site, serves it, opens Chromium (Debian's, with
 * --enable-unsafe-webgpu: a SwiftShader adapter here) on bench.html, and runs the harness in a worker there.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Page } from '@playwright/test';
import { CHROMIUM_PATH, WEBGPU_ARGS } from '../e2e/chromium';
import { METHOD_NAMES, type Method } from '../src/engine/drafters/index';
import type { BrowserCold } from './cold';
import type { ColdResult } from './cold-worker';
import { exportForTransformers } from './export-peer';
import type { BenchOptions, BenchPrompt, BenchReport, TraceRow } from './harness';
import { type BenchCli, plannedMethods, rememberedPaths, selectPrompts } from './options';
import type { PeerRow } from './peer-worker';

const PORT = 4183; // not on the fetch spec's bad-port list (4190 is)

/**
 * Per backend: how much to run unless the command line says otherwise. SwiftShader WebGPU is ~70x slower than
 * wasm, so its subset is short.
 */
const PLANS: Record<
  string,
  {
    device: 'wasm' | 'webgpu';
    perCategory: number;
    categories: string[] | null;
    options: Omit<BenchOptions, 'prompts' | 'log'>;
  }
> = {
  'chromium-wasm': {
    device: 'wasm',
    perCategory: 2,
    categories: null,
    options: {
      methods: [...METHOD_NAMES],
      maxNewTokens: 48,
      repeats: 1,
      curveQs: [1, 2, 4, 8, 16, 32, 64],
      curveReps: 5,
    },
  },
  'chromium-webgpu': {
    device: 'webgpu',
    perCategory: 1,
    categories: ['austen-heldout', 'repeat-quote'],
    options: {
      methods: ['ar', 'auto', 'chain', 'dynamic', 'lookup', 'eagle', 'medusa', 'swift'],
      maxNewTokens: 12,
      repeats: 1,
      // Up to EAGLE's widest tree (64 nodes): extrapolated from 8 and 16 its cost would be a guess.
      curveQs: [1, 2, 4, 8, 16, 32, 64],
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

export interface PeerReport {
  device: string;
  versions: string;
  rows: PeerRow[];
  markdown: string;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? ((s[(s.length - 1) >> 1] as number) + (s[s.length >> 1] as number)) / 2 : 0;
}

function peerMarkdown(device: string, best: string, versions: string, rows: PeerRow[], tokens: number): string {
  const t = median(rows.map((r) => r.transformers));
  const o = median(rows.map((r) => r.ours));
  const b = median(rows.map((r) => r.oursBest));
  return [
    `### Peer: transformers.js generate() vs ours, Chromium ${device}`,
    '',
    `${rows.length} prompts, ${tokens} new tokens, greedy, end-to-end tokens/s (prefill included), same weights (our export of the target), same browser and backend; ${versions}`,
    '',
    '| | tok/s (median) | vs transformers.js |',
    '| --- | --- | --- |',
    `| transformers.js generate() | ${t.toFixed(1)} | 1.00x |`,
    `| ours, plain decoding | ${o.toFixed(1)} | ${(o / t).toFixed(2)}x |`,
    `| ours, ${best} | ${b.toFixed(1)} | ${(b / t).toFixed(2)}x |`,
    '',
    `Greedy tokens identical to transformers.js on ${rows.filter((r) => r.same).length} of ${rows.length} prompts.`,
  ].join('\n');
}

export async function runBrowserBenches(
  backends: string[],
  allPrompts: BenchPrompt[],
  cli: BenchCli,
  /** bench --trace: where each backend's rounds go (none: not traced). */
  trace?: (backend: string) => (row: TraceRow) => void,
): Promise<{
  reports: Record<string, BenchReport | { error: string }>;
  peer: PeerReport | { error: string } | null;
  cold: BrowserCold | { error: string } | null;
}> {
  const peer: { device: 'wasm' | 'webgpu'; prompts: number; tokens: number; best: Method } | null = cli.peer
    ? { device: 'wasm', prompts: 6, tokens: 48, best: 'adaptive' } // the best method on wasm in the last run
    : null;
  const prompts = allPrompts.map((p) => p.text);
  const build = spawnSync('node_modules/.bin/vite', ['build'], { stdio: 'inherit' });
  if (build.status !== 0) throw new Error('vite build failed');
  if (peer) await exportForTransformers('public/models/austen-target', 'dist/peer-models/austen-target');
  let peerReport: PeerReport | { error: string } | null = null;
  let cold: BrowserCold | { error: string } | null = null;
  let server: ChildProcess | null = null;
  const reports: Record<string, BenchReport | { error: string }> = {};
  // --remember: a browser profile kept between runs (its IndexedDB holds what the engines learn), as a person's is.
  const launch = { executablePath: CHROMIUM_PATH, args: WEBGPU_ARGS, headless: true };
  const browser = cli.remember
    ? await chromium.launchPersistentContext(rememberedPaths().profile, launch)
    : await chromium.launch(launch);
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
    // bench --trace: the worker's rounds come back through the page, to the backend running now.
    let traced: ((row: TraceRow) => void) | null = null;
    if (trace) await page.exposeFunction('benchTrace', (row: TraceRow) => traced?.(row));
    await page.goto(url);
    for (const name of backends) {
      const plan = PLANS[name];
      if (!plan) {
        reports[name] = { error: `unknown backend ${name}` };
        continue;
      }
      console.log(`== ${name}`);
      const options: Omit<BenchOptions, 'log'> = {
        ...plan.options,
        ...(cli.quick ? { curveQs: [1, 4], curveReps: 1 } : {}),
        ...(cli.maxNewTokens ? { maxNewTokens: cli.maxNewTokens } : {}),
        ...(cli.repeats ? { repeats: cli.repeats } : {}),
        // The methods named on the command line, else this plan's (all of them for wasm).
        methods: plannedMethods(plan.options.methods, cli),
        ...(cli.draftModel ? {} : { withoutDraft: true as const }),
        ...(cli.remember ? { remember: true as const } : {}),
        ...(cli.draftDevice && plan.device === 'webgpu' ? { draftDevice: cli.draftDevice } : {}),
        ...(cli.headsDevice && plan.device === 'webgpu' ? { headsDevice: cli.headsDevice } : {}),
        prompts: selectPrompts(
          allPrompts,
          cli.categories ?? plan.categories,
          cli.promptsPerCategory ?? plan.perCategory,
        ),
      };
      traced = trace ? trace(name) : null;
      try {
        reports[name] = await page.evaluate(
          ([device, o, tracing]) => {
            const w = window as unknown as {
              benchmark: (
                d: string,
                o: unknown,
                log: (l: string) => void,
                onRound?: (row: unknown) => void,
              ) => Promise<BenchReport>;
              benchTrace?: (row: unknown) => Promise<void>;
            };
            // Each row goes to Node through a binding that answers asynchronously: the report waits for them all, so
            // that none lands under the next backend's name or after the trace's last flush.
            const sent: unknown[] = [];
            return w
              .benchmark(
                device,
                o,
                (l) => console.log(l),
                tracing ? (row) => sent.push(w.benchTrace?.(row)) : undefined,
              )
              .then(async (report) => {
                await Promise.all(sent);
                return report;
              });
          },
          [plan.device, options, traced !== null] as const,
        );
      } catch (e) {
        reports[name] = { error: (e as Error).message };
      }
    }
    if (backends.includes('chromium-wasm') && !cli.quick) {
      console.log('== cold: first generation on a first visit and after a reload (Chromium wasm)');
      const tokens = cli.maxNewTokens ?? 48;
      try {
        cold = { maxNewTokens: tokens, ...(await coldVisits(url, prompts[0] as string, tokens)) };
      } catch (e) {
        cold = { error: (e as Error).message };
      }
    }
    if (peer) {
      console.log(`== peer: transformers.js on Chromium ${peer.device}`);
      const tokens = peer.tokens;
      try {
        const r = await page.evaluate(
          (req) =>
            (
              window as unknown as {
                peerBenchmark: (r: unknown) => Promise<{ rows: PeerRow[]; versions: string }>;
              }
            ).peerBenchmark(req),
          {
            device: peer.device,
            prompts: prompts.slice(0, peer.prompts),
            maxNewTokens: tokens,
            best: peer.best,
          },
        );
        peerReport = {
          device: peer.device,
          versions: r.versions,
          rows: r.rows,
          markdown: peerMarkdown(peer.device, peer.best, r.versions, r.rows, peer.tokens),
        };
      } catch (e) {
        peerReport = { error: (e as Error).message };
      }
    }
  } finally {
    await browser.close();
    server?.kill();
  }
  return { reports, peer: peerReport, cold };
}

/**
 * A first visit, a reload, and a later visit (the browser closed and started again), all in one fresh browser
 * profile on disk, as a person's browser keeps it: each runs the cold worker once (plain decoding, and auto, the
 * default, in that order). A persistent profile, not a fresh context: an off-the-record context (Playwright's
 * browser.newContext()) keeps no compiled-code cache, so its reloads compile onnxruntime's wasm from scratch again.
 */
async function coldVisits(
  url: string,
  prompt: string,
  maxNewTokens: number,
): Promise<Omit<BrowserCold, 'maxNewTokens'>> {
  const profile = mkdtempSync(join(tmpdir(), 'spec-decoder-profile-'));
  const visit = async (page: Page): Promise<Record<string, ColdResult>> => {
    const runs: Record<string, ColdResult> = {};
    for (const method of ['ar', 'auto'] as const) {
      runs[method] = await page.evaluate(
        (req) => (window as unknown as { coldBenchmark: (r: unknown) => Promise<ColdResult> }).coldBenchmark(req),
        { device: 'wasm', method, prompt, maxNewTokens, steadyRuns: 6 },
      );
    }
    return runs;
  };
  const open = () =>
    chromium.launchPersistentContext(profile, { executablePath: CHROMIUM_PATH, args: WEBGPU_ARGS, headless: true });
  try {
    let context = await open();
    let page = context.pages()[0] ?? (await context.newPage());
    await page.goto(url);
    const first = await visit(page);
    await page.reload();
    const reload = await visit(page);
    await context.close();
    context = await open();
    try {
      page = context.pages()[0] ?? (await context.newPage());
      await page.goto(url);
      const later = await visit(page);
      return { first, reload, later };
    } finally {
      await context.close();
    }
  } finally {
    rmSync(profile, { recursive: true, force: true });
  }
}
