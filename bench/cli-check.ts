/**
 * The CLI against the warmed-up benchmark (backend `node-cli`): every method through `npm run generate` (one fresh
 * process per prompt and method, as a user runs it; through tools/bootstrap.mjs, without npm's own start-up), its
 * ms/token relative to plain decoding on the same prompt, next to the same ratio from the warmed-up harness on the
 * same prompts in this process. The two should agree: a CLI user should see the speedups the benchmark reports.
 *
 * The two halves are interleaved: every timed generation of the harness is followed by a CLI process for the same
 * method and prompt (the harness's process idle while it runs), so a drift of the machine's speed over the run, which
 * on our 2-core VMs reaches a quarter from hour to hour, moves both ratios alike.
 *
 * Both are timed over the rounds (the CLI's printed tok/s, the harness's tokensPerSecond): the prompt's prefill and
 * the set-up before the first round are left out of both. The whole generation's ms/token (wallMs, prefill included)
 * is reported beside them: it is not what the bench times, and a fixed prefill pulls every ratio towards 1 (bundled
 * pair, 64 new tokens, 5 prompts x 3: plain decoding 5.45 ms/token over the whole generation, 4.90 over its rounds;
 * the methods' ratios moved by 0.01 either way).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Method } from '../src/engine/drafters/index';
import type { SpecEngine } from '../src/engine/engine';
import { GREEDY } from '../src/engine/sampling';
import { defaultStorePath } from '../src/runtime/store-node';
import { median } from '../src/util/median';
import { lastJsonLine } from './child';
import { type BenchPrompt, type BenchReport, runBench, runNoted, runOnce } from './harness';
import { nodeWasmEngines } from './heads-engines';
import { medianInterval } from './median-interval';

export interface CliCheckRow {
  method: string;
  /** Median over prompts of the method's ms/token over plain decoding's on the same prompt. */
  cli: number;
  bench: number;
  /** Per prompt: CLI ms/token over the rounds for this method (median over the repeats). */
  cliMsPerToken: number[];
  /** The same over the whole generation, the prompt's prefill included (absent in reports before 2026-11-27). */
  cliWhole?: number;
  cliWallMsPerToken?: number[];
  /**
   * Interleaved reports: the median over prompts and repeats of (CLI / plain) over (bench / plain) from the pair of
   * runs made together, and its distribution-free 90% interval (absent for fewer than 5 pairs).
   */
  pairedOverBench?: number;
  pairedInterval?: [number, number];
}

export interface CliCheckReport {
  /** How the CLI processes compiled onnxruntime's wasm: SPEC_DECODER_WASM_TIERUP as set for them, or the CLI's own choice. */
  tiering: 'tier-up' | 'liftoff' | 'default';
  prompts: number;
  /** CLI runs per prompt and method (methods interleaved in each); the per-prompt figure is their median. */
  repeats: number;
  maxNewTokens: number;
  /** Each CLI run made right after the harness's generation of the same method and prompt (reports from 2026-11-30
   *  on; before, every CLI run came first and the harness after). */
  interleaved?: true;
  /** CPU time the harness's process used while the CLI processes ran (its onnxruntime threads should be idle). */
  parentCpuMs?: number;
  rows: CliCheckRow[];
}

/** ms/token of one CLI generation: over its rounds (as the harness times a method) and over the whole generation. */
interface CliTiming {
  rounds: number;
  wall: number;
}

function cliRun(
  method: string,
  prompt: string,
  maxNewTokens: number,
  env: NodeJS.ProcessEnv,
  threads: number,
): CliTiming {
  const r = spawnSync(
    process.execPath,
    [
      'tools/bootstrap.mjs',
      'generate',
      '--prompt',
      prompt,
      '--method',
      method,
      '--max-new-tokens',
      String(maxNewTokens),
      // The harness's count: the CLI's own choice when the bench chose as the CLI does, else the count asked for.
      '--threads',
      String(threads),
      '--json',
    ],
    { encoding: 'utf8', env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  if (r.status !== 0) throw new Error(`generate --method ${method} exited with ${r.status}: ${r.stderr.trim()}`);
  const out = lastJsonLine<{ tokens: number[]; stats: { wallMs: number; tokensPerSecond: number } }>(r.stdout);
  return { rounds: 1000 / out.stats.tokensPerSecond, wall: out.stats.wallMs / out.tokens.length };
}

/** Generations of 64 tokens either side may spend on swift's skip-set search before the timed runs. */
const SWIFT_SETTLE_RUNS = 12;

/**
 * `swift` searches its skip set while it decodes, and remembers the search between sessions. Timed from a fresh
 * search, the two halves would compare two searches at different points (the CLI's steps are timed in cold
 * processes, the harness's in a warm one; one prompt through the CLI ran at 38, 53, 49, 67, 72 and 147 tok/s in six
 * runs as the search went on). So both searches are run to their end first, as a returning user's would be: the CLI's
 * through its record store, the harness's in its engine.
 */
async function settleSwift(
  engine: SpecEngine,
  options: { prompts: readonly BenchPrompt[]; threads: number; log: (line: string) => void },
  env: NodeJS.ProcessEnv,
): Promise<void> {
  const text = (options.prompts[0] as BenchPrompt).text;
  const cliPhase = () => {
    const file = defaultStorePath(env);
    if (!existsSync(file)) return undefined;
    const records = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    const swift = Object.entries(records).find(([k]) => k.startsWith('swift:'))?.[1] as { phase?: string } | undefined;
    return swift?.phase;
  };
  let cliRuns = 0;
  while (cliPhase() !== 'accelerating' && cliRuns < SWIFT_SETTLE_RUNS) {
    cliRun('swift', text, 64, env, options.threads);
    cliRuns++;
  }
  let benchRuns = 0;
  let phase: unknown;
  while (phase !== 'accelerating' && benchRuns < SWIFT_SETTLE_RUNS) {
    phase = (await runNoted(engine, 'swift', text, 64, GREEDY)).note?.fields?.phase;
    benchRuns++;
  }
  options.log(
    `swift's search: the CLI's ${cliPhase() === 'accelerating' ? 'ended' : 'still searching'} after ${cliRuns} more run(s), the harness's ${phase === 'accelerating' ? 'ended' : 'still searching'} after ${benchRuns}`,
  );
}

export async function benchCliCheck(options: {
  /** The harness's wasm threads: what the CLI's auto choice is on this machine. */
  threads: number;
  methods: readonly Method[];
  prompts: readonly BenchPrompt[];
  maxNewTokens: number;
  /** CLI runs per prompt and method, and repeats of the harness (a one-shot process is noisy: 5.4-8.2 ms/token for
   *  plain decoding over ten single runs on our 2-core machine). */
  repeats: number;
  log: (line: string) => void;
}): Promise<CliCheckReport> {
  const methods = ['ar', ...options.methods.filter((m) => m !== 'ar')];
  const cache = mkdtempSync(join(tmpdir(), 'spec-decoder-cli-'));
  const env = { ...process.env, SPEC_DECODER_CACHE: cache };
  // Each pair made together, by method, prompt and repeat: the CLI's timing, and the harness's ms/token over the rounds.
  const pairs = new Map<string, { cli: CliTiming; bench: number }>();
  const pairKey = (m: string, p: number, r: number) => `${m} ${p} ${r}`;
  // The harness's process while a CLI process runs: its CPU time should stay near zero (onnxruntime's threads idle).
  let parentCpuMs = 0;
  let bench: BenchReport;
  try {
    // One untimed run per method first: it measures and remembers the costs, as a user's first run does.
    for (const m of methods) cliRun(m, (options.prompts[0] as BenchPrompt).text, 8, env, options.threads);
    const { engine, engineFor, release } = await nodeWasmEngines(options.methods, options.threads, options.log);
    try {
      if (methods.includes('swift')) await settleSwift(engineFor('swift'), options, env);
      bench = await runBench(engine, {
        engineFor,
        prompts: [...options.prompts],
        methods: [...options.methods],
        maxNewTokens: options.maxNewTokens,
        repeats: options.repeats,
        curveQs: [1, 2, 4, 8, 16, 32, 64],
        curveReps: 3,
        log: options.log,
        // Each timed generation of the harness is followed by the same method on the same prompt through the CLI, so
        // both ratios come from the same minutes of a machine whose speed drifts by a quarter from hour to hour.
        // After a CLI process the harness's engine has been idle for seconds (its threads parked, its weights out of
        // the caches, likely), and its generations right then were far noisier than warmed-up ones (README, *The CLI
        // against the benchmark*): an untimed generation of the same method first makes it warm again.
        beforeRun: async (method, p) => {
          await runOnce(engineFor(method), method, (options.prompts[p] as BenchPrompt).text, 8);
        },
        afterRun: (method, p, r, result) => {
          const before = process.cpuUsage();
          const t = cliRun(
            method,
            (options.prompts[p] as BenchPrompt).text,
            options.maxNewTokens,
            env,
            options.threads,
          );
          const used = process.cpuUsage(before);
          parentCpuMs += (used.user + used.system) / 1000;
          pairs.set(pairKey(method, p, r), { cli: t, bench: 1000 / result.stats.tokensPerSecond });
        },
      });
    } finally {
      await release();
    }
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
  // Per method and prompt: the median over the repeats of one of the CLI's timings.
  const perPrompt = (pick: (t: CliTiming) => number) =>
    new Map(
      methods.map((m) => [
        m,
        options.prompts.map((_, p) =>
          median(
            Array.from({ length: options.repeats }, (_, r) => pairs.get(pairKey(m, p, r))?.cli)
              .filter((t): t is CliTiming => t !== undefined)
              .map(pick),
          ),
        ),
      ]),
    );
  const cliMs = perPrompt((t) => t.rounds);
  const cliWallMs = perPrompt((t) => t.wall);
  options.log(
    `CLI: ${methods.map((m) => `${m} ${median(cliMs.get(m) ?? []).toFixed(2)}`).join(', ')} ms/token (medians over prompts); the harness's process used ${parentCpuMs.toFixed(0)} ms of CPU while the CLI ran`,
  );
  const overPlain = (perPrompt: Map<string, number[]>, m: string) => {
    const plain = perPrompt.get('ar') as number[];
    return median((perPrompt.get(m) as number[]).map((x, i) => x / (plain[i] as number)));
  };
  // Per prompt and repeat: (CLI ms/token over plain decoding's) over (the harness's, in the same minutes).
  const paired = (m: string): number[] =>
    options.prompts.flatMap((_, p) =>
      Array.from({ length: options.repeats }, (_, r) => {
        const a = pairs.get(pairKey(m, p, r));
        const plain = pairs.get(pairKey('ar', p, r));
        return a && plain ? a.cli.rounds / plain.cli.rounds / (a.bench / plain.bench) : Number.NaN;
      }).filter((x) => Number.isFinite(x)),
    );
  const rows = methods.map((m) => {
    const ms = cliMs.get(m) as number[];
    const each = paired(m);
    const interval = medianInterval(each, 0.9);
    const cell = bench.cells.find((c) => c.method === m);
    return {
      method: m,
      cli: overPlain(cliMs, m),
      cliWhole: overPlain(cliWallMs, m),
      cliWallMsPerToken: cliWallMs.get(m) as number[],
      // ms/token over plain decoding's is the inverse of the speedup (per prompt; the median of inverses is the
      // inverse of the median).
      bench: cell ? 1 / cell.speedup.median : Number.NaN,
      cliMsPerToken: ms,
      pairedOverBench: median(each),
      ...(interval ? { pairedInterval: [interval.lo, interval.hi] as [number, number] } : {}),
    };
  });
  const forced = process.env.SPEC_DECODER_WASM_TIERUP;
  const tiering = forced === '1' ? 'tier-up' : forced === '0' ? 'liftoff' : 'default';
  return {
    tiering,
    prompts: options.prompts.length,
    repeats: options.repeats,
    maxNewTokens: options.maxNewTokens,
    interleaved: true,
    parentCpuMs,
    rows,
  };
}

export function cliCheckMarkdown(r: CliCheckReport): string {
  return [
    '### The CLI against the warmed-up benchmark (wasm in Node)',
    '',
    `${r.prompts} prompts, ${r.maxNewTokens} new tokens, greedy. CLI: ${r.repeats} fresh \`npm run generate -- --json\` process(es) per prompt and method, ${r.interleaved ? "each right after the harness's generation of the same method and prompt" : 'methods interleaved, all before the harness ran'}, the median taken (costs remembered from an untimed first run per method; wasm compiled ${r.tiering === 'default' ? 'as the CLI chooses (compilation hints where they apply, else Liftoff only up to 512 tokens)' : r.tiering === 'tier-up' ? 'with tier-up and a keep-alive, SPEC_DECODER_WASM_TIERUP=1' : 'Liftoff only, SPEC_DECODER_WASM_TIERUP=0'}), ms/token over its rounds (the tok/s it prints); bench: the warmed-up harness on the same prompts in one process, ${r.repeats} repeat(s), timed over the rounds too. Each: the median over prompts of the method's ms/token over plain decoding's on the same prompt (below 1 is faster).${r.interleaved ? " Paired: for each prompt and repeat, the CLI's ratio over the harness's from the runs made together, the median over all of them and its 90% interval (distribution-free, from order statistics): within 10% where the interval lies inside 0.90-1.10." : ''} Last two columns: the CLI over its whole generation, the prompt's prefill included (not what the bench times).${r.parentCpuMs !== undefined ? ` The harness's process used ${(r.parentCpuMs / 1000).toFixed(1)} s of CPU while the CLI processes ran.` : ''}`,
    '',
    '| method | CLI ms/token (median) | CLI / plain | bench / plain | CLI over bench | paired: CLI over bench [90% interval] | CLI ms/token, whole generation | CLI / plain, whole generation |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...r.rows.map(
      (row) =>
        `| ${row.method} | ${median(row.cliMsPerToken).toFixed(2)} | ${row.cli.toFixed(2)} | ${row.bench.toFixed(2)} | ${(row.cli / row.bench).toFixed(2)} | ${row.pairedOverBench === undefined ? '-' : `${row.pairedOverBench.toFixed(2)}${row.pairedInterval ? ` [${row.pairedInterval[0].toFixed(2)}, ${row.pairedInterval[1].toFixed(2)}]` : ''}`} | ${row.cliWallMsPerToken ? median(row.cliWallMsPerToken).toFixed(2) : '-'} | ${row.cliWhole?.toFixed(2) ?? '-'} |`,
    ),
  ].join('\n');
}
