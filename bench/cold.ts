/**
 * The speed people get the first time (backend `node-cold`): fresh Node processes that each load the bundled pair
 * and generate (bench/cold-run.ts), next to the steady state measured at the end of the same processes; and
 * `npm run generate` timed end to end. The first process of each compilation starts with nothing
 * remembered (its costs are measured); the later ones find the records the first one wrote, as a user's second run
 * does.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hintedOrtWasm } from '../src/runtime/ort-node';
import { median } from '../src/util/median';
import { tsxJson } from './child';
import type { FirstAndSteady } from './cold-measure';
import type { ColdResult } from './cold-worker';

export interface ColdProcess extends FirstAndSteady {
  method: string;
  /** How onnxruntime's wasm was compiled: V8's default tiering (the library), or as the CLI does (ort-node.ts). */
  tier: 'default' | 'hinted' | 'liftoff' | 'keep-alive';
  bootMs: number;
  importMs: number;
  loadMs: number;
  warmupMs: number;
  calibrationMs: number;
  calibration: string;
}

export interface ColdReport {
  maxNewTokens: number;
  /** onnxruntime's wasm threads in every process. */
  threads: number;
  processes: ColdProcess[];
  /** Wall-clock seconds of `npm run generate -- --prompt … --max-new-tokens N`, each run. */
  cliSeconds: number[];
}

export function benchCold(options: {
  methods: readonly string[];
  processes: number;
  maxNewTokens: number;
  threads: number;
  log: (line: string) => void;
}): ColdReport {
  const cache = mkdtempSync(join(tmpdir(), 'spec-decoder-cold-'));
  // Each compilation has its own records, as a user's CLI always runs one: a record measured on another kind of
  // code fails the spot check against it (T(1) more than 1.5x off) and would be measured again every time.
  const envFor = (tier: string) => ({ ...process.env, SPEC_DECODER_CACHE: join(cache, tier) });
  // `npm run generate` compiles with hints here, and finds the records the hinted processes wrote.
  const env = envFor('hinted');
  const processes: ColdProcess[] = [];
  const hints = hintedOrtWasm();
  if (hints.reason) options.log(`no compilation hints row: ${hints.reason}`);
  const tiers = ['default', ...(hints.bytes ? (['hinted'] as const) : []), 'liftoff', 'keep-alive'] as const;
  try {
    for (let p = 0; p < options.processes; p++) {
      for (const tier of tiers) {
        for (const method of options.methods) {
          const args = [method, String(options.maxNewTokens), tier, String(options.threads)];
          const r = tsxJson<ColdProcess>('bench/cold-run.ts', args, envFor(tier), 'inherit');
          processes.push(r);
          options.log(
            `${method} (${tier}) process ${p + 1}: first ${r.generations.map((g) => g.msPerToken.toFixed(1)).join(', ')} ms/token, steady ${r.steadyMsPerToken.toFixed(1)}; calibration ${r.calibration}`,
          );
        }
      }
    }
    const cliSeconds: number[] = [];
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      const r = spawnSync(
        'npm',
        [
          'run',
          'generate',
          '--silent',
          '--',
          '--prompt',
          'It is a truth',
          '--max-new-tokens',
          String(options.maxNewTokens),
        ],
        { env, stdio: 'ignore' },
      );
      if (r.status !== 0) throw new Error(`npm run generate exited with ${r.status}`);
      cliSeconds.push((performance.now() - started) / 1000);
    }
    options.log(`npm run generate: ${cliSeconds.map((s) => s.toFixed(2)).join(', ')} s`);
    return { maxNewTokens: options.maxNewTokens, threads: options.threads, processes, cliSeconds };
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
}

export function coldMarkdown(r: ColdReport): string {
  const kinds = [...new Set(r.processes.map((p) => `${p.method} ${p.tier}`))];
  const rows = kinds.map((kind) => {
    const ps = r.processes.filter((p) => `${p.method} ${p.tier}` === kind);
    const [m, tier] = kind.split(' ');
    const gen = (i: number) => median(ps.map((p) => p.generations[i]?.msPerToken ?? Number.NaN));
    const steady = median(ps.map((p) => p.steadyMsPerToken));
    const ms = (key: 'bootMs' | 'importMs' | 'loadMs' | 'warmupMs' | 'firstResultMs') =>
      median(ps.map((p) => p[key])).toFixed(0);
    const calibration = ps.map((p) => `${p.calibration} ${p.calibrationMs.toFixed(0)}`).join(' / ');
    const how = {
      default: 'default (library)',
      hinted: 'compilation hints (CLI)',
      liftoff: 'Liftoff only (CLI without hints, <= 512 tokens)',
      'keep-alive': 'tier-up, loop kept alive (CLI without hints, > 512)',
    };
    return `| ${m} | ${how[tier as ColdProcess['tier']]} | ${gen(0).toFixed(2)} | ${gen(1).toFixed(2)} | ${gen(2).toFixed(2)} | ${steady.toFixed(2)} | ${(gen(0) / steady).toFixed(2)}x | ${ms('bootMs')} | ${ms('importMs')} | ${ms('loadMs')} (${ms('warmupMs')}) | ${calibration} | ${ms('firstResultMs')} |`;
  });
  return [
    '### First generation in a fresh Node process (wasm)',
    '',
    `${r.processes.length / Math.max(1, kinds.length)} fresh processes per row, ${r.maxNewTokens} new tokens, greedy, ${r.threads} wasm thread(s); ms/token of the 1st, 2nd and 3rd generation against the same processes' steady state (median of 8 more); times in ms, medians over the processes (calibration per process: the first finds nothing remembered). Compilation: V8's default tiering (Liftoff, then TurboFan in the background), compilation hints (the hot functions with TurboFan up front, the rest Liftoff, no tier-up), Liftoff only, or tier-up with an interval keeping the event loop alive (src/runtime/ort-node.ts)`,
    '',
    '| method | wasm compilation | 1st | 2nd | 3rd | steady | 1st/steady | Node + loader | imports | load (warm-up) | calibration | process start to first result |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
    `\`npm run generate -- --prompt "It is a truth" --max-new-tokens ${r.maxNewTokens}\` end to end (default method, costs remembered): ${r.cliSeconds.map((s) => `${s.toFixed(2)} s`).join(', ')}`,
  ].join('\n');
}

/**
 * The browser's cold runs (bench/cold-worker.ts) in one browser profile: a first visit, a reload, and a later visit
 * after the browser was closed; each runs ar and then auto.
 */
export interface BrowserCold {
  maxNewTokens: number;
  first: Record<string, ColdResult>;
  reload: Record<string, ColdResult>;
  later: Record<string, ColdResult>;
}

export function browserColdMarkdown(r: BrowserCold): string {
  const row = (visit: string, method: string, c: ColdResult | undefined) =>
    c
      ? `| ${visit} | ${method} | ${c.generations.map((g) => g.msPerToken.toFixed(2)).join(' / ')} | ${c.steadyMsPerToken.toFixed(2)} | ${((c.generations[0]?.msPerToken ?? Number.NaN) / c.steadyMsPerToken).toFixed(2)}x | ${c.startedMs.toFixed(0)} | ${c.loadMs.toFixed(0)} (${c.warmupMs.toFixed(0)}) | ${c.calibrationMs.toFixed(0)} | ${c.firstResultMs.toFixed(0)} |`
      : `| ${visit} | ${method} | - | - | - | - | - | - | - |`;
  return [
    '### First generation in Chromium (wasm): first visit, reload, later visit',
    '',
    `A fresh browser profile on disk (empty HTTP cache, nothing compiled cached), a reload, then the browser closed and started again on the same profile; each runs a fresh worker that loads the bundled pair and generates ${r.maxNewTokens} tokens (plain decoding, then auto, in the same visit: auto's worker finds the browser's caches warm from the plain one); ms/token of the 1st, 2nd and 3rd generation against the same worker's steady state (median of 6 more); times in ms from the worker's start`,
    '',
    '| visit | method | 1st / 2nd / 3rd | steady | 1st/steady | worker script ready | load (warm-up) | calibration | first result |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...Object.entries(r.first).map(([m, c]) => row('first visit', m, c)),
    ...Object.entries(r.reload).map(([m, c]) => row('reload', m, c)),
    ...Object.entries(r.later ?? {}).map(([m, c]) => row('later visit', m, c)),
  ].join('\n');
}
