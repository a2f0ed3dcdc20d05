/**
 * `npm run bench` flags: parsed and checked here (a bad flag is one line and exit code 2, never a stack trace or an
 * empty results file).
 */
import { appendFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { isMethod, METHOD_NAMES, type Method } from '../src/engine/drafters/index';
import { checkSampling, isGreedy, type SamplingParams } from '../src/engine/sampling';
import { type Placement, placementFlagError } from '../src/model/device-choice';
import { PRECISIONS, type Precision } from '../src/model/precision';
import { defaultStorePath } from '../src/runtime/store-node';
import { isThreadCount } from '../src/runtime/threads';
import { joinNegativeValues, numberFlag } from '../src/util/args';
import type { BenchPrompt } from './harness';

export const BACKENDS = [
  'node-wasm',
  'node-cold',
  'node-cli',
  'node-memory',
  'node-webgpu',
  'chromium-wasm',
  'chromium-webgpu',
] as const;
export type Backend = (typeof BACKENDS)[number];

export const BENCH_USAGE = `usage: npm run bench -- [options]

Runs the bundled pair on bench/prompts.json, methods interleaved, and prints tables (overall and per prompt
category); writes bench/results/<date>-<N>cpu.json and bench/results/latest.md (a run of part of it writes
<date>T<hhmm>-<N>cpu-partial-<what>.json and partial.md instead; --quick, <date>-<N>cpu-quick.json and quick.md).

  --backends LIST      comma-separated, from ${BACKENDS.join(', ')} (default: all; node-cold: first
                       generations in fresh Node processes and \`npm run generate\` timed; node-cli: every method through the CLI
                       against the warmed-up harness on the same prompts (one per category and 3 repeats unless
                       --prompts / --repeats say otherwise); node-memory: what each
                       method's engine holds, wasm heap and GPU buffers, in fresh processes; node-webgpu needs a Vulkan
                       adapter: lavapipe on a CPU-only machine, which the bootstrap installs)
  --methods LIST       methods to compare (default: all, but the WebGPU backends on a software adapter run a short
                       list of their own; named methods run on every backend; plain decoding 'ar' always runs as
                       the baseline): ${METHOD_NAMES.join(', ')}
  --categories LIST    prompt categories (default: all): see "kind" in bench/prompts.json
  --prompts N          at most N prompts from each category (default: all in Node; fewer in Chromium)
  --repeats N          repeats of every prompt (default: 2 in Node, 1 in Chromium)
  --max-new-tokens N   tokens per generation (default: 64 in Node, 48 Chromium wasm, 12 Chromium WebGPU)
  --threads N|auto     wasm threads in Node (default auto: measured once per machine, as the CLI does)
  --precision P        the models' precision on node-wasm: ${PRECISIONS.join(', ')} (default auto, as everywhere;
                       results go to their own files, the precision in the name)
  --exact              node-wasm: the target built for exact decoding (EngineLoadOptions.exact; "exact" in the
                       results files' names)
  --temperature T      sample instead of decoding greedily (node-wasm and node-webgpu; default 0 = greedy); with
  --top-k K, --top-p P the sampling filters (Hugging Face order). Each prompt and repeat has one seed, shared by
                       the methods; results go to their own files ("sampled" in the name)
  --no-draft           load no draft model (node-wasm, node-webgpu, Chromium): what a person who loads one model gets;
                       the methods that need it are skipped and auto drafts with what is left (prompt lookup,
                       lookahead on a GPU, the EAGLE head); "no-draft" in the results files' names
  --draft-device D     where the draft model runs on the WebGPU backends (node-webgpu, chromium-webgpu): auto (the
                       engine's default: timed on both, the faster kept), wasm or webgpu; "draft-wasm" (etc.) in
                       the results files' names
  --heads-device D     the same for the draft heads; "heads-wasm" (etc.) in the results files' names
  --remember           the engines keep what they learn between bench runs, as a returning user's do (auto's arms,
                       calibrated costs, the drafters' learned values, graph and device choices): node-wasm and
                       node-webgpu in <cache>/bench-records.json, Chromium in the browser profile <cache>/bench-chromium-
                       profile (<cache>: $SPEC_DECODER_CACHE, else $XDG_CACHE_HOME/spec-decoder, else ~/.cache/spec-decoder;
                       delete them to start over).
                       Without it every run starts from nothing, as a first session does. The first run fills the store;
                       the table says how many earlier runs it holds; "remembered" in the results files' names
  --trace FILE         every round of the timed generations as JSON lines (backend, method, prompt, repeat, round,
                       tokens, tree width, ms, the drafter's note): how auto spent its rounds
  --no-peer            skip the transformers.js peer comparison in Chromium
  --quick              about a minute: node-wasm only (unless --backends), one prompt per category, 16 tokens,
                       a short curve; also BENCH_QUICK=1
  --help               this text`;

export class BenchUsageError extends Error {}

export interface BenchCli {
  backends: Backend[];
  methods: Method[];
  /** Whether --methods named them (else every method, and the backends with a plan of their own run its list). */
  methodsNamed: boolean;
  categories: string[] | null;
  /** Overrides of the per-backend plans (null: the plan's own). */
  promptsPerCategory: number | null;
  repeats: number | null;
  maxNewTokens: number | null;
  threads: number | 'auto';
  /** The models' precision on node-wasm (null: the engine's default, auto). */
  precision: Precision | null;
  /** node-wasm: the target built for exact decoding. */
  exact: boolean;
  /** Whether the engines may load the draft model (false: --no-draft). */
  draftModel: boolean;
  /** Where the draft model runs on the WebGPU backends (--draft-device; absent: the engine's default, auto). */
  draftDevice?: Placement;
  /** Where the draft heads run on the WebGPU backends (--heads-device; absent: auto). */
  headsDevice?: Placement;
  /** Whether the engines keep what they learn in a store kept between bench runs (--remember). */
  remember: boolean;
  /** A file for every round of the timed generations, as JSON lines (--trace; every backend). */
  trace?: string;
  /** Sampling settings for the harness runs (null: greedy). */
  sampling: SamplingParams | null;
  peer: boolean;
  quick: boolean;
  help: boolean;
}

/** --threads: what ortForNode takes (1 to 64; it threw a RangeError with a stack trace beyond). */
function threadCount(raw: string | undefined): number | null {
  const n = positive('threads', raw);
  if (n !== null && !isThreadCount(n)) throw new BenchUsageError(`--threads must be auto or 1 to 64; got ${n}`);
  return n;
}

/** --trace: a file that can be written, checked before anything runs (it was a stack trace once the run began). */
function traceFile(path: string): string {
  if (path.trim() === '') throw new BenchUsageError('--trace needs a file name');
  try {
    appendFileSync(path, '');
  } catch (e) {
    throw new BenchUsageError(
      `--trace ${path}: cannot write it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
    );
  }
  return path;
}

function positive(name: string, raw: string | undefined): number | null {
  if (raw === undefined) return null;
  if (!/^[1-9][0-9]{0,5}$/.test(raw.trim()))
    throw new BenchUsageError(`--${name} expects a positive integer, got "${raw}"`);
  return Number(raw);
}

/** The backends that apply each flag that only some of them do. */
const FLAG_BACKENDS: Record<string, readonly Backend[]> = {
  '--precision': ['node-wasm'],
  '--exact': ['node-wasm'],
  '--draft-device': ['node-webgpu', 'chromium-webgpu'],
  '--heads-device': ['node-webgpu', 'chromium-webgpu'],
  '--temperature': ['node-wasm', 'node-webgpu'],
  '--remember': ['node-wasm', 'node-webgpu', 'chromium-wasm', 'chromium-webgpu'],
};

/**
 * A comma-separated list, each name once (null: the flag was not given). An empty list is refused: it read as "every
 * one", the whole default bench; a name given twice ran twice and made a run of one method look like the full list.
 */
function list(name: string, raw: string | undefined): string[] | null {
  if (raw === undefined) return null;
  const items = [
    ...new Set(
      raw
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  ];
  if (items.length === 0) throw new BenchUsageError(`--${name} needs at least one name; got "${raw}"`);
  return items;
}

export function parseBenchArgs(argv: string[], env: Record<string, string | undefined>, kinds: string[]): BenchCli {
  let values: Record<string, string | boolean | undefined>;
  try {
    const valueFlags = new Set([
      '--backends',
      '--methods',
      '--categories',
      '--prompts',
      '--repeats',
      '--max-new-tokens',
      '--threads',
      '--precision',
      '--temperature',
      '--top-k',
      '--top-p',
      '--draft-device',
      '--heads-device',
      '--trace',
    ]);
    ({ values } = parseArgs({
      args: joinNegativeValues(argv, valueFlags),
      strict: true,
      allowPositionals: false,
      options: {
        backends: { type: 'string' },
        methods: { type: 'string' },
        categories: { type: 'string' },
        prompts: { type: 'string' },
        repeats: { type: 'string' },
        'max-new-tokens': { type: 'string' },
        threads: { type: 'string' },
        precision: { type: 'string' },
        temperature: { type: 'string' },
        'top-k': { type: 'string' },
        'top-p': { type: 'string' },
        'draft-device': { type: 'string' },
        'heads-device': { type: 'string' },
        trace: { type: 'string' },
        'no-peer': { type: 'boolean' },
        'no-draft': { type: 'boolean' },
        exact: { type: 'boolean' },
        remember: { type: 'boolean' },
        quick: { type: 'boolean' },
        help: { type: 'boolean' },
      },
    }));
  } catch (e) {
    throw new BenchUsageError((e as Error).message.split('\n')[0] ?? 'bad arguments');
  }
  const quick = Boolean(values.quick) || env.BENCH_QUICK === '1';
  const backends = list('backends', values.backends as string | undefined) ?? (quick ? ['node-wasm'] : [...BACKENDS]);
  for (const b of backends)
    if (!(BACKENDS as readonly string[]).includes(b))
      throw new BenchUsageError(`--backends: unknown backend "${b}" (use ${BACKENDS.join(', ')})`);
  const methods = list('methods', values.methods as string | undefined) ?? [...METHOD_NAMES];
  for (const m of methods)
    if (!isMethod(m)) throw new BenchUsageError(`--methods: unknown method "${m}" (use ${METHOD_NAMES.join(', ')})`);
  const precision = (values.precision as string | undefined) ?? null;
  if (precision !== null && !(PRECISIONS as readonly string[]).includes(precision))
    throw new BenchUsageError(`--precision must be one of ${PRECISIONS.join(', ')}; got "${precision}"`);
  const draftDevice = values['draft-device'] as string | undefined;
  const headsDevice = values['heads-device'] as string | undefined;
  const badPlacement = placementFlagError(draftDevice, headsDevice);
  if (badPlacement) throw new BenchUsageError(badPlacement);
  const categories = list('categories', values.categories as string | undefined);
  for (const c of categories ?? [])
    if (!kinds.includes(c))
      throw new BenchUsageError(`--categories: unknown category "${c}" (use ${kinds.join(', ')})`);
  // A flag that none of the backends asked for applies is refused: the results file was named after it (e.g.
  // "…-chromium-wasm-…-int8.json") while the run decoded in fp32.
  const given: [string, boolean][] = [
    ['--precision', precision !== null],
    ['--exact', Boolean(values.exact)],
    ['--draft-device', draftDevice !== undefined],
    ['--heads-device', headsDevice !== undefined],
    ['--temperature', values.temperature !== undefined],
    ['--remember', Boolean(values.remember)],
  ];
  for (const [flag, on] of given) {
    const takers = FLAG_BACKENDS[flag] as readonly string[];
    if (on && !backends.some((b) => takers.includes(b)))
      throw new BenchUsageError(
        `${flag} applies to ${takers.join(' and ')} only; --backends has ${backends.join(', ')}`,
      );
  }
  return {
    backends: backends as Backend[],
    methods: methods as Method[],
    methodsNamed: values.methods !== undefined,
    categories,
    promptsPerCategory: positive('prompts', values.prompts as string | undefined) ?? (quick ? 1 : null),
    repeats: positive('repeats', values.repeats as string | undefined) ?? (quick ? 1 : null),
    maxNewTokens: positive('max-new-tokens', values['max-new-tokens'] as string | undefined) ?? (quick ? 16 : null),
    threads: values.threads === 'auto' ? 'auto' : (threadCount(values.threads as string | undefined) ?? 'auto'),
    precision: precision as Precision | null,
    exact: Boolean(values.exact),
    draftModel: !values['no-draft'],
    remember: Boolean(values.remember),
    ...(draftDevice ? { draftDevice: draftDevice as Placement } : {}),
    ...(headsDevice ? { headsDevice: headsDevice as Placement } : {}),
    ...(typeof values.trace === 'string' ? { trace: traceFile(values.trace) } : {}),
    sampling: samplingFlags(values),
    peer: !values['no-peer'] && !quick,
    quick,
    help: Boolean(values.help),
  };
}

function samplingFlags(values: Record<string, string | boolean | undefined>): SamplingParams | null {
  // Decimals all three (a fractional top-k is refused by checkSampling below, naming it).
  const num = (name: string, fallback: number): number =>
    numberFlag(name, values[name] as string | undefined, fallback, false, (m) => new BenchUsageError(m));
  const sampling = { temperature: num('temperature', 0), topK: num('top-k', 0), topP: num('top-p', 1), seed: 1 };
  try {
    checkSampling(sampling);
  } catch (e) {
    throw new BenchUsageError(`--${(e as Error).message}`);
  }
  if (isGreedy(sampling)) {
    if (sampling.topK !== 0 || sampling.topP !== 1)
      throw new BenchUsageError(
        '--top-k and --top-p need --temperature above 0 (without it the bench decodes greedily)',
      );
    return null;
  }
  return sampling;
}

/** At most `perCategory` prompts of each selected category, in file order. */
export function selectPrompts(
  all: BenchPrompt[],
  categories: string[] | null,
  perCategory: number | null,
): BenchPrompt[] {
  const taken = new Map<string, number>();
  return all.filter((p) => {
    if (categories && !categories.includes(p.kind)) return false;
    const n = taken.get(p.kind) ?? 0;
    if (perCategory !== null && n >= perCategory) return false;
    taken.set(p.kind, n + 1);
    return true;
  });
}

/**
 * A run of part of the benchmark (some backends, methods or prompts, or other plan sizes): its results go to their own
 * files, so a partial run never replaces the full run's tables.
 */
export function partialRun(cli: BenchCli): string | null {
  const parts: string[] = [];
  if (cli.backends.length < BACKENDS.length) parts.push(cli.backends.join('+'));
  if (cli.methods.length < METHOD_NAMES.length) parts.push(cli.methods.join('+'));
  if (cli.categories) parts.push(cli.categories.join('+'));
  if (cli.promptsPerCategory !== null || cli.repeats !== null || cli.maxNewTokens !== null || !cli.peer)
    parts.push('sized');
  if (cli.sampling) parts.push('sampled');
  if (cli.precision) parts.push(cli.precision);
  if (cli.exact) parts.push('exact');
  if (!cli.draftModel) parts.push('no-draft');
  if (cli.draftDevice) parts.push(`draft-${cli.draftDevice}`);
  if (cli.headsDevice) parts.push(`heads-${cli.headsDevice}`);
  if (cli.remember) parts.push('remembered');
  return parts.length > 0 ? parts.join('-') : null;
}

/** Where --remember keeps the engines' records in Node, and the browser profile for Chromium. */
export function rememberedPaths(env: Record<string, string | undefined> = process.env): {
  records: string;
  profile: string;
} {
  const folder = dirname(defaultStorePath(env));
  return { records: join(folder, 'bench-records.json'), profile: join(folder, 'bench-chromium-profile') };
}

/**
 * The methods a backend with a plan of its own runs (the slow WebGPU adapters): those named with --methods, all of
 * them, else the plan's list. Before, a named method outside the plan was left out without a word.
 */
export function plannedMethods(planned: readonly Method[], cli: Pick<BenchCli, 'methods' | 'methodsNamed'>): Method[] {
  return cli.methodsNamed ? [...cli.methods] : [...planned];
}
