/**
 * onnxruntime-web for Node (tests, CLI, benchmarks): the wasm EP, single-threaded by default so that timings are
 * steady and nothing depends on worker threads.
 */
import * as ort from 'onnxruntime-web';

let configured = false;

export function ortForNode(numThreads = 1): typeof ort {
  if (!configured) {
    ort.env.wasm.numThreads = numThreads;
    ort.env.logLevel = 'error';
    configured = true;
  }
  return ort;
}
