/**
 * Keeping Node from waiting on V8's background compiles of onnxruntime's wasm. V8 compiles it with Liftoff, then
 * tiers hot functions up to TurboFan on background threads; whenever Node's event loop runs out of handles (a short
 * script awaiting between rounds, or ORT awaiting a GPU promise), Node drains those background tasks before going
 * on, and at the end the same drain holds the exit. Two ways out, measured for WebGPU in ort-node-webgpu.ts and for
 * wasm in ort-node.ts:
 *   - no tier-up: `--liftoff-only`, set at run time before ORT compiles its wasm (`v8.setFlagsFromString` works as
 *     well as the command-line flag, so tsx, vitest workers and the bundled kit need no node arguments);
 *   - tier-up with an interval holding the event loop awake, until the returned function is called (a process in
 *     that mode should end with process.exit(): the drain would still hold a natural exit);
 *   - compilation hints (wasm-hints.ts): the hot functions compiled with TurboFan up front, the rest with Liftoff,
 *     no tier-up (so no background compiles after the load).
 * And the one-shot process's own JavaScript (javaScriptTieringFor): on V8's baseline tiers for a short generation
 * whose rounds call no draft model, so that no optimising compile takes a core during it.
 * Node only.
 */
import v8 from 'node:v8';
import type { RoundCalls } from '../engine/drafters/method';

/** How this process compiles wasm: V8's default, or as set here (the flags also hold in its workers). */
export type WasmCompile = 'default' | 'liftoff' | 'hinted' | 'tier-up';

let mode: WasmCompile = 'default';

export function wasmCompileMode(): WasmCompile {
  return mode;
}

/** Without tier-up (Liftoff only, or the hinted functions with TurboFan up front), code is as fast from the first
 *  call as it will get. */
export function wasmWithoutTierUp(): boolean {
  return mode === 'liftoff' || mode === 'hinted';
}

/** The V8 major version whose compilation hints section was measured here (Node 20's V8 11.3). */
export const HINTS_V8 = 11;

/** Whether this V8 (by its version string) reads the compilation hints section as measured here. */
export function v8ReadsHints(v8 = process.versions.v8): boolean {
  return v8.startsWith(`${HINTS_V8}.`);
}

/**
 * Read wasm compilation hints (V8 11's experimental section) and tier nothing up: hinted functions get their tiers
 * from the hints, the rest Liftoff only. Before onnxruntime compiles its wasm.
 */
export function compileWithHints(): void {
  for (const flag of ['--experimental-wasm-compilation-hints', '--no-wasm-tier-up', '--no-wasm-dynamic-tiering'])
    v8.setFlagsFromString(flag);
  mode = 'hinted';
}

/** Returns what to call when the process is done (clears the keep-alive; nothing to do without tier-up). */
export function avoidTierUpStall(tierUp: boolean): () => void {
  if (!tierUp) {
    v8.setFlagsFromString('--liftoff-only');
    mode = 'liftoff';
    return () => {};
  }
  mode = 'tier-up';
  const keepAlive = setInterval(() => {}, 5);
  return () => clearInterval(keepAlive);
}

/** How a one-shot process's JavaScript is compiled: V8's default tiers, or its baseline tiers only. */
export type JsCompile = 'default' | 'baseline';

/**
 * Longest generation whose JavaScript a one-shot process keeps on V8's baseline tiers (javaScriptTieringFor), by
 * what its rounds call (roundCalls in src/engine/drafters/method.ts); 0: never.
 */
export const JS_BASELINE_UP_TO: Readonly<Record<RoundCalls, number>> = {
  'one-call': 512,
  'several-calls': 64,
  'draft-model': 0,
};

/**
 * How a process that loads, generates up to `maxNewTokens` tokens and ends (the CLI) compiles its JavaScript from
 * here on (call it after the load, before generating): V8's baseline tiers only (Ignition and Sparkplug,
 * `--max-opt=1`, no optimising compiles) up to JS_BASELINE_UP_TO tokens for what the method's rounds call, else V8's
 * default. Why: in a fresh process V8 optimises the generation's JavaScript with TurboFan on a background thread while
 * the generation runs (onnxruntime's session `run`, an async function, took 79 ms to compile; its input glue 19-23
 * ms), from about the 30th model call on, and on our 2 cores each compile holds the core that onnxruntime's second
 * wasm thread needs: a call split over both threads waits for the slower half. A short generation does not earn
 * those compiles back (plain decoding, 512 tokens: 3.90 against 4.45 ms/token through the CLI), unless its rounds
 * make several short calls of a draft model with a key/value tensor per layer, where that glue is most of a call (on
 * the baseline tiers they ran 35-60% slower through the CLI in 64 tokens), and sooner where they make several
 * target-sized calls (layer skipping 13% faster on the baseline tiers in 64 tokens, 15% slower in 128; EAGLE alike in
 * 64, 10% slower in 128). README, "The CLI against the benchmark". SPEC_DECODER_JS_TIERUP=1 (V8's default) or 0
 * (baseline only) overrides the choice. Process-wide and for good.
 */
export function javaScriptTieringFor(
  maxNewTokens: number,
  rounds: RoundCalls,
  env: NodeJS.ProcessEnv = process.env,
): JsCompile {
  const forced = env.SPEC_DECODER_JS_TIERUP;
  const baseline = forced === '0' || (forced !== '1' && maxNewTokens <= JS_BASELINE_UP_TO[rounds]);
  if (!baseline) return 'default';
  v8.setFlagsFromString('--max-opt=1');
  return 'baseline';
}
