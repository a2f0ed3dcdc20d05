/**
 * onnxruntime-web in the browser: the native WebGPU EP build (`onnxruntime-web/webgpu`, which throws on errors
 * instead of returning silent zeros), with its wasm binaries served from our own origin.
 */
import * as ort from 'onnxruntime-web/webgpu';

export type Ort = typeof ort;

let configuredBase: string | undefined;

/** Whether ortForWeb(wasmBase) can serve here: onnxruntime is set up once, from the first folder asked for. */
export function ortServes(wasmBase: string): boolean {
  return configuredBase === undefined || configuredBase === wasmBase;
}

/**
 * @param wasmBase absolute URL of the folder holding ort-wasm-simd-threaded.asyncify.{mjs,wasm}
 *   (the build puts them in `ort/` beside index.html).
 */
export function ortForWeb(wasmBase: string): Ort {
  if (!ortServes(wasmBase)) {
    throw new Error(`onnxruntime-web is already configured with wasm files from ${configuredBase}`);
  }
  if (configuredBase === undefined) {
    ort.env.wasm.wasmPaths = wasmBase.endsWith('/') ? wasmBase : `${wasmBase}/`;
    // Errors only: ORT's warnings (e.g. shape ops placed on the CPU, as expected) reach the console as errors.
    ort.env.logLevel = 'error';
    configuredBase = wasmBase;
  }
  return ort;
}
