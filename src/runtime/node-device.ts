/**
 * The onnxruntime-web a Node front end (CLI, benchmark) should use for a requested device: the wasm EP, or the
 * WebGPU EP on Dawn, falling back to wasm with the reason said when WebGPU has no adapter here.
 */
import type { Device } from '../model/runner';
import { ortForNode, ortThreads, wasmTieringFor } from './ort-node';
import { ortForNodeWebGpu } from './ort-node-webgpu';
import { describeThreads, type ThreadChoice } from './thread-probe';
import { chooseNodeWasmThreads, type NodeThreadOptions } from './thread-probe-node';
import { type AdapterReport, describeAdapter } from './webgpu';

export interface NodeRuntime {
  ort: ReturnType<typeof ortForNode>;
  device: Device;
  /** The WebGPU adapter, when device is 'webgpu'. */
  adapter: AdapterReport | null;
  /** On wasm: the threads onnxruntime runs with and how they were chosen. */
  threads: ThreadChoice | null;
  /** Call once the engine is released, before the process ends. */
  shutdown: () => Promise<void>;
}

/**
 * @param say where the adapter line or the fallback notice goes (the CLI uses stderr, so --json stays parseable)
 * @param threads wasm threads: a number, or auto: measured on `target` and `draft` (thread-probe-node.ts; remembered
 *   in `store`)
 *   and said on `say`
 * @param oneShot for a process that loads, generates up to this many tokens and ends (the CLI): wasm compiled so
 *   that its first generation runs at full speed (wasmTieringFor); WebGPU in Node always runs on Liftoff
 */
export async function nodeRuntime(
  requested: Device,
  say: (line: string) => void,
  threads: number | { auto: NodeThreadOptions } = 1,
  oneShot: { maxNewTokens: number } | null = null,
): Promise<NodeRuntime> {
  if (requested === 'webgpu') {
    const gpu = await ortForNodeWebGpu();
    if (gpu.ok) {
      say(`WebGPU adapter: ${describeAdapter(gpu.adapter)}`);
      return { ort: gpu.ort, device: 'webgpu', adapter: gpu.adapter, threads: null, shutdown: gpu.shutdown };
    }
    say(`WebGPU unavailable, falling back to wasm: ${gpu.reason}`);
  }
  // The compile mode first: the thread probe's workers run under it too.
  const done = oneShot ? wasmTieringFor(oneShot.maxNewTokens) : () => {};
  let choice: ThreadChoice =
    typeof threads === 'number'
      ? { threads, how: 'asked', cores: 0, timings: [], ms: 0 }
      : ortThreads() === null
        ? await chooseNodeWasmThreads(threads.auto)
        : { threads: ortThreads() as number, how: 'already running', cores: 0, timings: [], ms: 0 };
  if (choice.how === 'measured') say(`wasm threads: ${describeThreads(choice)}`);
  const ort = ortForNode(choice.threads);
  // onnxruntime was started earlier in this process (a test, a library user) with its own count: that one runs.
  const running = ortThreads() as number;
  if (running !== choice.threads) choice = { ...choice, threads: running, how: 'already running' };
  return { ort, device: 'wasm', adapter: null, threads: choice, shutdown: async () => done() };
}
