/**
 * onnxruntime-web for Node (tests, CLI, benchmarks): the wasm EP, single-threaded by default so that timings are
 * steady and nothing depends on worker threads.
 */
import * as ort from 'onnxruntime-web';
import { avoidTierUpStall } from './v8-tiering';

let configured: number | null = null;

/**
 * onnxruntime-web for this process on `numThreads` wasm threads. The count is fixed when onnxruntime's wasm starts,
 * so only the first call sets it: later calls get the same onnxruntime, whatever they ask (see ortThreads()).
 */
export function ortForNode(numThreads = 1): typeof ort {
  if (configured === null) {
    ort.env.wasm.numThreads = numThreads;
    ort.env.logLevel = 'error';
    configured = numThreads;
  }
  return ort;
}

/** The wasm threads this process's onnxruntime runs with (null before ortForNode). */
export function ortThreads(): number | null {
  return configured;
}

/**
 * How V8 compiles onnxruntime's wasm in a process that loads, generates and ends (the CLI), against the tier-up
 * stall (v8-tiering.ts: a short script's event loop is empty between rounds). Measured on our 2-core machine, bundled pair, 64 tokens, fresh processes (bench's
 * node-cold table): default tiering: first generation 16-24 ms/token (one 0.5-0.7 s wait), steady 3.6 (auto) and
 * 4.5 (plain) ms/token, first result 3.1-3.9 s after process start; Liftoff only: first 6.3-6.7 ms/token, steady
 * 4.8 and 5.4 (a quarter slower), first result 2.1-2.2 s; tier-up with a keep-alive interval (no wait): first 8.6,
 * steady at TurboFan's speed, first result 2.9 s. So Liftoff only pays up to a few hundred tokens, the keep-alive
 * beyond. A long-lived process (a server holds handles, so it never waits) needs neither.
 * SPEC_DECODER_WASM_TIERUP=1 (tier-up, keep-alive) or 0 (Liftoff only) overrides the choice. On Liftoff code the
 * verify-cost curve is steeper than on TurboFan's (wide calls are compute-bound), so speculation gains less in a
 * short CLI run than in the warmed-up benchmark (the bench's node-cli table).
 * Returns what to call at the end (the keep-alive's interval is cleared).
 */
export function wasmTieringFor(maxNewTokens: number, env: NodeJS.ProcessEnv = process.env): () => void {
  // SPEC_DECODER_WASM_TIERUP=1 or 0 overrides the choice (as for WebGPU in Node, ort-node-webgpu.ts).
  const forced = env.SPEC_DECODER_WASM_TIERUP;
  return avoidTierUpStall(forced === '1' ? true : forced === '0' ? false : maxNewTokens > LIFTOFF_UP_TO);
}

/** Longest generation compiled with Liftoff only (break-even against tier-up measured at 650-800 tokens). */
export const LIFTOFF_UP_TO = 512;
