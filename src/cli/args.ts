/**
 * The terminal front end's flags: parsed strictly (decimal numbers only, safe integers, ranges checked), every
 * mistake one line naming the flag.
 */
import { realpathSync } from 'node:fs';
import { parseArgs } from 'node:util';
import {
  defaultHeads,
  describeNeeds,
  headsNeeded,
  isMethod,
  METHOD_NAMES,
  METHODS,
  type Method,
  methodSpec,
  uses,
} from '../engine/drafters/index';
import type { SamplingParams } from '../engine/sampling';
import { type Placement, placementFlagError } from '../model/device-choice';
import { PRECISIONS, type Precision } from '../model/precision';
import { isThreadCount } from '../runtime/threads';
import { firstLine, joinNegativeValues, numberFlag } from '../util/args';

export const DEFAULT_TARGET = 'public/models/austen-target';
export const DEFAULT_DRAFT = 'public/models/austen-draft';
/** Heads trained on the bundled target (tools/README.md), used when a method needs them and --heads is not given. */
export const DEFAULT_HEADS = { medusa: 'public/models/austen-medusa', eagle3: 'public/models/austen-eagle3' } as const;

/** Whether `target` is the bundled target however it is written (./, a trailing slash, absolute, a symlink). */
export function isBundledTarget(target: string): boolean {
  if (target === DEFAULT_TARGET) return true;
  try {
    return realpathSync(target) === realpathSync(DEFAULT_TARGET);
  } catch {
    return false; // not a folder here (a hub id, a typo): not the bundled one
  }
}

export const USAGE = `usage: npm run generate -- --prompt TEXT [--target DIR] [--draft DIR] [--heads DIR] [--method NAME]
       [--max-new-tokens N] [--temperature T] [--top-p P] [--top-k K] [--seed S] [--device wasm|webgpu]
       [--draft-device auto|wasm|webgpu] [--heads-device auto|wasm|webgpu] [--precision fp32|fp16|int4|int8|auto] [--exact] [--verify rejection|typical] [--threads N|auto]
       [--chat [--system TEXT]] [--json]

--target/--draft/--heads take a folder or a hub id, hf:org/name[@revision] (HF_ENDPOINT, HF_TOKEN and HF_HOME as
for huggingface_hub). --heads: Medusa heads or an EAGLE-3 head trained on the target (for medusa and eagle, and
auto uses them when given; the bundled target has its own, and auto takes its EAGLE head with --device webgpu).
--chat sends the prompt as a user message through the target's chat template.
--threads: onnxruntime's wasm threads; auto (the default) times 1, 2, ... up to the cores on the target once per
machine and remembers the fastest (SPEC_DECODER_CACHE). --exact: greedy speculation gives exactly plain decoding's
tokens, bit-exact near-ties included (the target's attention in its row-invariant form, checked at load on this
device; a few percent slower). --draft-device: where the draft model runs; auto (the default) times it on both
next to --device webgpu and keeps the faster, remembered per machine (a small draft's call on the CPU costs what its
weights cost to read, on a GPU its dispatches). --heads-device: the same for the draft heads.

methods (--method; the draft model and heads are loaded only for methods that need them):
${METHODS.map((m) => `  ${m.name.padEnd(14)} ${m.description} [${describeNeeds(m)}${m.lossless ? '' : ', LOSSY'}]`).join('\n')}

Colours follow the terminal: none when stdout is not a terminal or NO_COLOR is set; FORCE_COLOR=1 forces them.`;

export class UsageError extends Error {}

export interface CliOptions {
  prompt: string;
  target: string;
  draft: string;
  /** Draft heads for medusa / eagle (default: the bundled target's, when the target is the bundled one). */
  heads?: string;
  method: Method;
  maxNewTokens: number;
  sampling: SamplingParams;
  device: 'wasm' | 'webgpu';
  /** Where the draft model runs (EngineLoadOptions.draftDevice; absent: auto, measured next to a WebGPU target). */
  draftDevice?: Placement;
  /** Where the draft heads run (EngineLoadOptions.headsDevice; absent: auto). */
  headsDevice?: Placement;
  /** onnxruntime's wasm threads (wasm only): a number, or 'auto' (the default): measured once per machine and model. */
  threads: number | 'auto';
  /** --threads was given (a note says it is not used when the target runs on WebGPU). */
  threadsAsked: boolean;
  precision: Precision;
  /** Exact decoding (EngineLoadOptions.exact). */
  exact: boolean;
  verify: 'rejection' | 'typical';
  /** Flags given that change nothing for this run (said on stderr as notes, never silently dropped). */
  unused: string[];
  json: boolean;
  help: boolean;
  /** Send the prompt as a user message through the chat template (after a system message, when given). */
  chat: boolean;
  system?: string;
}

const VALUE_FLAGS = [
  'prompt',
  'target',
  'draft',
  'heads',
  'method',
  'max-new-tokens',
  'temperature',
  'top-p',
  'top-k',
  'seed',
  'device',
  'draft-device',
  'heads-device',
  'precision',
  'verify',
  'threads',
  'system',
] as const;

const BOOLEAN_FLAGS = ['json', 'exact', 'chat', 'help'] as const;

/** A decimal number (or a safe integer), or a UsageError naming the flag. */
const number = (name: string, raw: string | undefined, fallback: number, integer = false): number =>
  numberFlag(name, raw, fallback, integer, (message) => new UsageError(message));

/** Whether a method's rounds verify drafts at all: plain decoding's do not, so its output is the target's own. */
export function verifiesDrafts(method: Method): boolean {
  return method !== 'ar';
}

/**
 * node:util's parse error as one line. Its first line alone said of `--prompt --json` only "Option '--prompt'
 * argument is ambiguous."; the line says what is missing and how to give a value that starts with a dash.
 */
function usageLine(e: Error, argv: readonly string[]): string {
  const ambiguous = /^Option '(--[\w-]+)' argument is ambiguous/.exec(e.message);
  const option = ambiguous?.[1];
  const next = option === undefined ? undefined : argv[argv.indexOf(option) + 1];
  if (option === undefined || next === undefined) return firstLine(e.message);
  return `${option} has no value: ${next} after it is an option (a value that starts with a dash is written ${option}=${next})`;
}

export function parseCli(argv: string[]): CliOptions {
  let values: Record<string, string | boolean | undefined>;
  let given: { kind: string; name?: string }[];
  try {
    ({ values, tokens: given } = parseArgs({
      tokens: true,
      args: joinNegativeValues(
        argv,
        new Set(VALUE_FLAGS.map((f) => `--${f}`)),
        new Set(['--prompt', '--system']),
        new Set([...VALUE_FLAGS, ...BOOLEAN_FLAGS].map((f) => `--${f}`)),
      ),
      strict: true,
      allowPositionals: false,
      options: {
        ...Object.fromEntries(VALUE_FLAGS.map((f) => [f, { type: 'string' as const }])),
        ...Object.fromEntries(BOOLEAN_FLAGS.map((f) => [f, { type: 'boolean' as const }])),
      },
    }));
  } catch (e) {
    throw new UsageError(usageLine(e as Error, argv));
  }
  // A flag given twice: the last one won without a word (`--prompt x --prompt y` generated from "y").
  const seen = new Set<string>();
  for (const t of given) {
    if (t.kind !== 'option' || t.name === undefined) continue;
    if (seen.has(t.name)) throw new UsageError(`--${t.name} is given more than once`);
    seen.add(t.name);
  }
  const str = (k: (typeof VALUE_FLAGS)[number]) => values[k] as string | undefined;
  const help = Boolean(values.help);
  const prompt = str('prompt');
  if (!help && (prompt === undefined || prompt.length === 0)) throw new UsageError('--prompt TEXT is required');
  const method = str('method') ?? 'auto';
  if (!isMethod(method)) throw new UsageError(`--method must be one of ${METHOD_NAMES.join(', ')}; got "${method}"`);
  const device = str('device') ?? 'wasm';
  if (device !== 'wasm' && device !== 'webgpu')
    throw new UsageError(`--device must be wasm or webgpu; got "${device}"`);
  const draftDevice = str('draft-device');
  const headsDevice = str('heads-device');
  const badPlacement = placementFlagError(draftDevice, headsDevice);
  if (badPlacement) throw new UsageError(badPlacement);
  const precision = str('precision') ?? 'auto';
  if (!(PRECISIONS as readonly string[]).includes(precision))
    throw new UsageError(`--precision must be one of ${PRECISIONS.join(', ')}; got "${precision}"`);
  const verify = str('verify') ?? 'rejection';
  if (verify !== 'rejection' && verify !== 'typical')
    throw new UsageError(`--verify must be rejection or typical; got "${verify}"`);
  const sampling: SamplingParams = {
    temperature: number('temperature', str('temperature'), 0),
    topK: number('top-k', str('top-k'), 0, true),
    topP: number('top-p', str('top-p'), 1),
    seed: number('seed', str('seed'), 0, true),
  };
  if (sampling.temperature < 0) throw new UsageError(`--temperature must be >= 0; got ${sampling.temperature}`);
  if (sampling.topK < 0) throw new UsageError(`--top-k must be >= 0; got ${sampling.topK}`);
  if (!(sampling.topP > 0 && sampling.topP <= 1))
    throw new UsageError(`--top-p must be in (0, 1]; got ${sampling.topP}`);
  if (str('system') !== undefined && !values.chat) throw new UsageError('--system needs --chat');
  const threadsArg = str('threads') ?? 'auto';
  const threads = threadsArg === 'auto' ? 'auto' : number('threads', threadsArg, 1, true);
  if (threads !== 'auto' && !isThreadCount(threads))
    throw new UsageError(`--threads must be auto or between 1 and 64; got ${threads}`);
  const maxNewTokens = number('max-new-tokens', str('max-new-tokens'), 64, true);
  if (maxNewTokens < 1) throw new UsageError(`--max-new-tokens must be >= 1; got ${maxNewTokens}`);
  const target = str('target') ?? DEFAULT_TARGET;
  const bundled = isBundledTarget(target);
  const spec = methodSpec(method);
  let heads = str('heads');
  if (heads === undefined && headsNeeded(spec) && !bundled && !help)
    throw new UsageError(`--method ${method} ${describeNeeds(spec)}: pass --heads DIR trained on ${target}`);
  // The bundled target's heads where the method needs them, or (auto on WebGPU) where they pay.
  const kind = defaultHeads(spec, device);
  if (heads === undefined && kind && bundled && !help) heads = DEFAULT_HEADS[kind];
  const unused: string[] = [];
  if (str('draft') !== undefined && !uses(spec, 'draft-model'))
    unused.push(`--draft is not used: method ${method} runs no draft model`);
  if (str('heads') !== undefined && !uses(spec, 'medusa-heads') && !uses(spec, 'eagle-head'))
    unused.push(`--heads is not used: method ${method} runs no draft heads`);
  if (draftDevice !== undefined && !uses(spec, 'draft-model'))
    unused.push(`--draft-device is not used: method ${method} runs no draft model`);
  const runsHeads = uses(spec, 'medusa-heads') || uses(spec, 'eagle-head');
  if (headsDevice !== undefined && (heads === undefined || !runsHeads))
    unused.push(`--heads-device is not used: method ${method} runs no draft heads${runsHeads ? ' here' : ''}`);
  if (verify === 'typical' && sampling.temperature === 0)
    unused.push('--verify typical changes nothing under greedy decoding (it applies with --temperature > 0)');
  else if (verify === 'typical' && !verifiesDrafts(method))
    unused.push(`--verify typical is not used: method ${method} verifies no drafts (its output is the target's own)`);
  const samplingOnly = (['top-k', 'top-p', 'seed'] as const).filter((f) => str(f) !== undefined);
  if (samplingOnly.length > 0 && sampling.temperature === 0)
    unused.push(
      `${samplingOnly.map((f) => `--${f}`).join(', ')} ${samplingOnly.length > 1 ? 'change' : 'changes'} nothing under greedy decoding (${samplingOnly.length > 1 ? 'they apply' : 'it applies'} with --temperature > 0)`,
    );
  return {
    prompt: prompt ?? '',
    target,
    draft: str('draft') ?? DEFAULT_DRAFT,
    // Heads a method does not run are not loaded (a broken folder failed a `chain` run it played no part in).
    ...(heads !== undefined && runsHeads ? { heads } : {}),
    method,
    maxNewTokens,
    sampling,
    device,
    ...(draftDevice !== undefined ? { draftDevice: draftDevice as Placement } : {}),
    ...(headsDevice !== undefined ? { headsDevice: headsDevice as Placement } : {}),
    threads,
    threadsAsked: str('threads') !== undefined,
    precision: precision as Precision,
    exact: Boolean(values.exact),
    verify,
    unused,
    json: Boolean(values.json),
    help,
    chat: Boolean(values.chat),
    ...(str('system') !== undefined ? { system: str('system') as string } : {}),
  };
}

/** The prompt as the engine takes it: text, or the chat messages. */
export function enginePrompt(o: CliOptions) {
  if (!o.chat) return o.prompt;
  const system = o.system === undefined ? [] : [{ role: 'system' as const, content: o.system }];
  return { messages: [...system, { role: 'user' as const, content: o.prompt }] };
}
