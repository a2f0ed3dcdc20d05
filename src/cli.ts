/**
 * Terminal front end: `npm run generate -- --prompt TEXT [options]`. Prints the text with ANSI colours (green
 * accepted, red struck-through rejected, blue target tokens) and a stats line, or one JSON object with --json.
 * It is also the contract the benchmarks and checks use.
 */
import { parseArgs } from 'node:util';
import { isMethod, METHOD_DESCRIPTIONS, METHODS, type Method } from './engine/drafters/index';
import { SpecEngine } from './engine/engine';
import type { GenerationResult, RoundEvent } from './engine/events';
import type { SamplingParams } from './engine/sampling';
import { nodeRuntime } from './runtime/node-device';

export const DEFAULT_TARGET = 'public/models/austen-target';
export const DEFAULT_DRAFT = 'public/models/austen-draft';

const USAGE = `usage: npm run generate -- --prompt TEXT [--target DIR] [--draft DIR] [--method ${METHODS.join('|')}]
       [--max-new-tokens N] [--temperature T] [--top-p P] [--top-k K] [--seed S] [--device wasm|webgpu]
       [--verify rejection|typical] [--json]

methods:
${METHODS.map((m) => `  ${m.padEnd(9)} ${METHOD_DESCRIPTIONS[m]}`).join('\n')}`;

class UsageError extends Error {}

interface CliOptions {
  prompt: string;
  target: string;
  draft: string;
  method: Method;
  maxNewTokens: number;
  sampling: SamplingParams;
  device: 'wasm' | 'webgpu';
  verify: 'rejection' | 'typical';
  json: boolean;
}

function number(name: string, raw: string | undefined, fallback: number, integer = false): number {
  if (raw === undefined) return fallback;
  const v = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(v) || (integer && !Number.isInteger(v))) {
    throw new UsageError(`--${name} expects ${integer ? 'an integer' : 'a number'}, got "${raw}"`);
  }
  return v;
}

export function parseCli(argv: string[]): CliOptions {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        prompt: { type: 'string' },
        target: { type: 'string' },
        draft: { type: 'string' },
        method: { type: 'string' },
        'max-new-tokens': { type: 'string' },
        temperature: { type: 'string' },
        'top-p': { type: 'string' },
        'top-k': { type: 'string' },
        seed: { type: 'string' },
        device: { type: 'string' },
        verify: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean' },
      },
    }));
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  if (values.help) throw new UsageError('help');
  if (typeof values.prompt !== 'string' || values.prompt.length === 0)
    throw new UsageError('--prompt TEXT is required');
  const method = (values.method as string | undefined) ?? 'dynamic';
  if (!isMethod(method)) throw new UsageError(`--method must be one of ${METHODS.join(', ')}; got "${method}"`);
  const device = (values.device as string | undefined) ?? 'wasm';
  if (device !== 'wasm' && device !== 'webgpu')
    throw new UsageError(`--device must be wasm or webgpu; got "${device}"`);
  const verify = (values.verify as string | undefined) ?? 'rejection';
  if (verify !== 'rejection' && verify !== 'typical')
    throw new UsageError(`--verify must be rejection or typical; got "${verify}"`);
  const sampling: SamplingParams = {
    temperature: number('temperature', values.temperature as string | undefined, 0),
    topK: number('top-k', values['top-k'] as string | undefined, 0, true),
    topP: number('top-p', values['top-p'] as string | undefined, 1),
    seed: number('seed', values.seed as string | undefined, 0, true),
  };
  if (sampling.temperature < 0) throw new UsageError('--temperature must be >= 0');
  if (sampling.topK < 0) throw new UsageError('--top-k must be >= 0');
  if (!(sampling.topP > 0 && sampling.topP <= 1)) throw new UsageError('--top-p must be in (0, 1]');
  const maxNewTokens = number('max-new-tokens', values['max-new-tokens'] as string | undefined, 64, true);
  if (maxNewTokens < 1) throw new UsageError('--max-new-tokens must be >= 1');
  return {
    prompt: values.prompt,
    target: (values.target as string | undefined) ?? DEFAULT_TARGET,
    draft: (values.draft as string | undefined) ?? DEFAULT_DRAFT,
    method,
    maxNewTokens,
    sampling,
    device,
    verify,
    json: Boolean(values.json),
  };
}

const ansi = { green: '\x1b[32m', red: '\x1b[31;9m', blue: '\x1b[34m', dim: '\x1b[2m', reset: '\x1b[0m' };

function colourRound(e: RoundEvent): string {
  const part = (colour: string, text: string) => (text ? `${colour}${text}${ansi.reset}` : '');
  return (
    part(ansi.green, e.accepted.map((t) => t.text).join('')) +
    part(ansi.red, e.rejected.map((t) => t.text).join('')) +
    part(ansi.blue, e.target.map((t) => t.text).join(''))
  );
}

export function statsLine(r: GenerationResult, method: Method): string {
  const s = r.stats;
  const depth = s.acceptanceByDepth.map((a) => a.toFixed(2)).join(' ') || '-';
  return (
    `${method}: ${s.tokens} tokens in ${s.rounds} rounds | tau ${s.tau.toFixed(2)} tokens/target call | ` +
    `acceptance by depth ${depth} | target calls ${s.targetCalls}, draft calls ${s.draftCalls} | ` +
    `${s.tokensPerSecond.toFixed(1)} tok/s | outside model calls ${(100 * s.overheadShare).toFixed(1)}% | stop: ${r.stopReason}`
  );
}

export async function main(argv: string[]): Promise<number> {
  let options: CliOptions;
  try {
    options = parseCli(argv);
  } catch (e) {
    if (e instanceof UsageError) {
      if (e.message === 'help') {
        console.log(USAGE);
        return 0;
      }
      console.error(`error: ${e.message} (see --help)`);
      return 2;
    }
    throw e;
  }
  // WebGPU in Node runs on Dawn; the adapter (or why there is none and wasm is used) goes to stderr.
  const runtime = await nodeRuntime(options.device, (line) => console.error(line));
  let engine: SpecEngine;
  try {
    engine = await SpecEngine.load(runtime.ort, {
      target: options.target,
      ...(options.method === 'ar' ? {} : { draft: options.draft }),
      device: runtime.device,
    });
  } catch (e) {
    console.error(`error: ${(e as Error).message}`);
    await runtime.shutdown();
    return 2;
  }
  try {
    // The adaptive method picks its draft length from this machine's measured costs (a few dozen quick calls).
    if (options.method === 'adaptive') await engine.calibrate([1, 2, 4, 8, 16], 3);
    const rounds: { accepted: number[]; rejected: number[]; target: number[] }[] = [];
    const it = engine.generate(options.prompt, {
      method: options.method,
      maxNewTokens: options.maxNewTokens,
      sampling: options.sampling,
      verifyRule: options.verify,
    });
    if (!options.json) process.stdout.write(options.prompt);
    let result: GenerationResult;
    for (;;) {
      const step = await it.next();
      if (step.done) {
        result = step.value;
        break;
      }
      const e = step.value;
      rounds.push({
        accepted: e.accepted.map((t) => t.id),
        rejected: e.rejected.map((t) => t.id),
        target: e.target.map((t) => t.id),
      });
      if (!options.json) process.stdout.write(colourRound(e));
    }
    if (options.json) {
      const { stats } = result;
      console.log(
        JSON.stringify({
          tokens: result.tokens,
          text: result.text,
          rounds,
          stats: {
            targetCalls: stats.targetCalls,
            draftCalls: stats.draftCalls,
            tau: stats.tau,
            wallMs: stats.wallMs,
            tokensPerSecond: stats.tokensPerSecond,
            acceptanceByDepth: stats.acceptanceByDepth,
            overheadShare: stats.overheadShare,
            stopReason: result.stopReason,
          },
        }),
      );
    } else {
      process.stdout.write(`\n\n${ansi.dim}${statsLine(result, options.method)}${ansi.reset}\n`);
      if (options.verify === 'typical' && options.sampling.temperature > 0) {
        console.log(
          `${ansi.dim}note: typical acceptance is LOSSY: the output is not exactly the target's distribution${ansi.reset}`,
        );
      }
    }
    return 0;
  } catch (e) {
    console.error(`\nerror: ${(e as Error).message}`);
    return 2;
  } finally {
    await engine.release();
    await runtime.shutdown();
  }
}

// Run when executed directly (tsx src/cli.ts …), not when imported by tests.
if (process.argv[1] && /cli\.[cm]?[jt]s$/.test(process.argv[1])) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e) => {
      console.error(`error: ${(e as Error).stack ?? e}`);
      process.exit(1);
    },
  );
}
