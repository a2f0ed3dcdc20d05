/** What the terminal front end prints: coloured rounds (on a terminal), the stats line, and the JSON object. */
import type { Method } from '../engine/drafters/index';
import type { GenerationResult, RoundEvent } from '../engine/events';
import { armsText } from '../engine/stats';
import type { EngineTimings } from '../engine/timings';
import type { ThreadTiming } from '../runtime/thread-probe';

/** Colour when stdout is a terminal, unless NO_COLOR is set; FORCE_COLOR (not "0") forces it. */
export function wantColour(env: Record<string, string | undefined>, isTTY: boolean | undefined): boolean {
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0') return true;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  return Boolean(isTTY);
}

const ansi = { green: '\x1b[32m', red: '\x1b[31;9m', blue: '\x1b[34m', dim: '\x1b[2m', reset: '\x1b[0m' };

export interface Painter {
  round(e: RoundEvent): string;
  dim(text: string): string;
}

/** Green accepted, red struck-through rejected, blue target tokens; plain text without colour. */
export function painter(colour: boolean): Painter {
  const part = (code: string, text: string) => (text && colour ? `${code}${text}${ansi.reset}` : text);
  const join = (pieces: { text: string }[]) => pieces.map((t) => t.text).join('');
  return {
    // Without colour rejected tokens are left out: the text reads as the output, nothing struck through.
    round: (e) =>
      part(ansi.green, join(e.accepted)) +
      (colour ? part(ansi.red, join(e.rejected)) : '') +
      part(ansi.blue, join(e.target)),
    dim: (text) => part(ansi.dim, text),
  };
}

export function statsLine(r: GenerationResult, method: Method): string {
  const s = r.stats;
  const depth = s.acceptanceByDepth.map((a) => a.toFixed(2)).join(' ') || '-';
  return (
    `${method}: ${s.tokens} tokens in ${s.rounds} rounds | tau ${s.tau.toFixed(2)} tokens/target call | ` +
    `acceptance by depth ${depth} | target calls ${s.targetCalls}, draft calls ${s.draftCalls} | ` +
    `${s.tokensPerSecond.toFixed(1)} tok/s | outside model calls ${(100 * s.overheadShare).toFixed(1)}% | ` +
    `${s.arms ? `rounds per drafter: ${armsText(s.arms)} | ` : ''}stop: ${r.stopReason}` +
    (r.context ? ` (${r.context.of}, ${r.context.limit} tokens)` : '')
  );
}

export interface RoundIds {
  accepted: number[];
  rejected: number[];
  target: number[];
}

export const roundIds = (e: RoundEvent): RoundIds => ({
  accepted: e.accepted.map((t) => t.id),
  rejected: e.rejected.map((t) => t.id),
  target: e.target.map((t) => t.id),
});

/**
 * The --json object; `error` is present when the run failed part-way (everything before it is kept); `timings` are
 * the engine's load, warm-up and calibration times, apart from the generation's own; `runtime` the device, the
 * wasm threads it ran with and how they were chosen (with the probe's timings when measured or remembered), and
 * what the target ran (precision, graph variant, exact decoding) and the draft model (device, precision).
 */
export function jsonResult(
  result: GenerationResult,
  rounds: RoundIds[],
  error?: Error,
  timings?: EngineTimings,
  runtime?: {
    device: string;
    threads: number;
    threadChoice?: { how: string; timings: readonly ThreadTiming[] };
    /** What the target ran: its precision label, graph variant and whether decoding is exact. */
    target?: { precision: string; graph: string; exact: boolean };
    /**
     * Where the draft model ran and in what precision (when one was loaded), and how its device was decided: asked
     * for, measured (with the timed calls on each device) or remembered.
     */
    draft?: { device: string; precision: string; how: string; timings?: readonly object[] };
    /** The same for the draft heads (their precision: what they compute in). */
    heads?: { device: string; precision: string; how: string; timings?: readonly object[] };
  },
): string {
  const { stats } = result;
  return JSON.stringify({
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
      // A context shorter than the target's that stopped the run: its limit and whose it is.
      ...(result.context ? { context: result.context } : {}),
      // auto: rounds, tokens and milliseconds per drafter it chose (the text line's "rounds per drafter").
      ...(stats.arms ? { arms: stats.arms } : {}),
    },
    ...(timings ? { timings } : {}),
    ...(runtime ? { runtime } : {}),
    ...(error ? { error: { name: error.name, message: error.message } } : {}),
  });
}
