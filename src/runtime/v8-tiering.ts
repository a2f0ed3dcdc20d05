/**
 * Keeping Node from waiting on V8's background compiles of onnxruntime's wasm. V8 compiles it with Liftoff, then
 * tiers hot functions up to TurboFan on background threads; whenever Node's event loop runs out of handles (a short
 * script awaiting between rounds, or ORT awaiting a GPU promise), Node drains those background tasks before going
 * on, and at the end the same drain holds the exit. Two ways out, measured for WebGPU in ort-node-webgpu.ts and for
 * wasm in ort-node.ts:
 *   - no tier-up: `--liftoff-only`, set at run time before ORT compiles its wasm (`v8.setFlagsFromString` works as
 *     well as the command-line flag, so tsx, vitest workers and the bundled kit need no node arguments);
 *   - tier-up with an interval holding the event loop awake, until the returned function is called (a process in
 *     that mode should end with process.exit(): the drain would still hold a natural exit).
 * Node only.
 */
import v8 from 'node:v8';

let liftoffOnly = false;

/** Whether this process compiles wasm with Liftoff only (set here; the flag also holds in its workers). */
export function wasmLiftoffOnly(): boolean {
  return liftoffOnly;
}

/** Returns what to call when the process is done (clears the keep-alive; nothing to do without tier-up). */
export function avoidTierUpStall(tierUp: boolean): () => void {
  if (!tierUp) {
    v8.setFlagsFromString('--liftoff-only');
    liftoffOnly = true;
    return () => {};
  }
  const keepAlive = setInterval(() => {}, 5);
  return () => clearInterval(keepAlive);
}
