/**
 * onnxruntime started while the model files are read. Its first session makes onnxruntime-web compile and
 * instantiate its wasm, start its threads and build what any first session builds (the CPU kernels' registry, in
 * wasm on the main thread); a later session pays none of that. That used to wait until the target's files had been
 * read and checked and its graph built, one after the other. Now a one-node session is created as the load starts:
 * V8 compiles the wasm on a background thread and onnxruntime's worker threads start while the main thread reads
 * and parses the models, and the target's session, queued behind it (ort-exclusive.ts), finds onnxruntime ready.
 * openModels does this in Node only (index.ts says why).
 */
import { OnnxGraph } from './graph/onnx';
import { createSession } from './ort-exclusive';
import type { Ort } from './runner';

/** Each onnxruntime's start, once (a second engine in the process starts nothing; a failed start stays failed). */
const starts = new WeakMap<object, Promise<unknown>>();

/** How long each onnxruntime's start took (ms), once it is done. */
const durations = new WeakMap<object, number>();

/** A graph of one Identity node: the smallest session onnxruntime builds. */
function oneNodeModel(): Uint8Array {
  const g = new OnnxGraph('start');
  g.op('Identity', [g.input('x', 'float32', [1])], {}, 'y');
  g.output('y', 'float32', [1]);
  return g.toBytes();
}

/**
 * Start onnxruntime's wasm in the background; resolves to what went wrong (onnxruntime then refuses every later
 * session with only "previous call to 'initializeWebAssembly()' failed", so the caller reports this error instead),
 * or null. Never rejects.
 */
export function startOrt(ort: Ort): Promise<unknown> {
  let start = starts.get(ort);
  if (!start) {
    const began = performance.now();
    start = createSession(ort, oneNodeModel(), { executionProviders: ['wasm'], logSeverityLevel: 3 })
      .then(
        (session) =>
          session.release().then(
            () => null,
            () => null,
          ),
        (e: unknown) => e ?? new Error('onnxruntime could not start'),
      )
      .then((outcome) => {
        durations.set(ort, performance.now() - began);
        return outcome;
      });
    starts.set(ort, start);
  }
  return start;
}

/** Whether this onnxruntime's start has been asked for (it may still be under way). */
export function ortStartAsked(ort: Ort): boolean {
  return starts.has(ort);
}

/**
 * How long this onnxruntime's start took (ms: its wasm compiled and instantiated, its threads started, its runtime's
 * first-session set-up), once startOrt's promise has resolved; undefined before, or when it was never started here.
 */
export function ortStartMs(ort: Ort): number | undefined {
  return durations.get(ort);
}
