/** Where an engine's time went before generating (milliseconds), reported by the CLI, the worker and the bench. */
export interface EngineTimings {
  /** Reading the model files and building the sessions. */
  loadMs: number;
  /**
   * Of loadMs, onnxruntime's start, where it is measured on its own: in Node on wasm the load starts onnxruntime (its
   * wasm compiled and instantiated, its threads, its runtime's first-session set-up) beside the reading of the files,
   * so the two overlap. Absent in a browser and on WebGPU, where the target's session starts it, and for a second
   * engine in a process that had started it already.
   */
  startMs?: number;
  /** The warm-up calls after loading; 0 when there were none (`warmup: false`: a software WebGPU adapter). */
  warmupMs: number;
  /** Measuring (or checking a remembered) cost curve; 0 until it happens. */
  calibrationMs: number;
  calibration: 'none' | 'measured' | 'remembered';
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(ms < 100 ? 3 : 2)} s`;

/**
 * One line for people: "loaded in 1.16 s (onnxruntime's start 0.64 s of it, beside the reading), warm-up 0.07 s,
 * costs remembered (checked in 0.001 s)". "no warm-up" when there was none; the calibration part only once it has
 * happened.
 */
export function timingsText(t: EngineTimings): string {
  const start = t.startMs !== undefined ? ` (onnxruntime's start ${seconds(t.startMs)} of it, beside the reading)` : '';
  const costs =
    t.calibration === 'measured'
      ? `, costs measured in ${seconds(t.calibrationMs)}`
      : t.calibration === 'remembered'
        ? `, costs remembered (checked in ${seconds(t.calibrationMs)})`
        : '';
  const warmup = t.warmupMs > 0 ? `warm-up ${seconds(t.warmupMs)}` : 'no warm-up';
  return `loaded in ${seconds(t.loadMs)}${start}, ${warmup}${costs}`;
}
