/**
 * The onnxruntime-web a Node front end (CLI, benchmark) should use for a requested device: the wasm EP, or the
 * WebGPU EP on Dawn, falling back to wasm with the reason said when WebGPU has no adapter here.
 */
import type { Device } from '../model/runner';
import { ortForNode, wasmTieringFor } from './ort-node';
import { ortForNodeWebGpu } from './ort-node-webgpu';
import { type AdapterReport, describeAdapter } from './webgpu';

export interface NodeRuntime {
  ort: ReturnType<typeof ortForNode>;
  device: Device;
  /** The WebGPU adapter, when device is 'webgpu'. */
  adapter: AdapterReport | null;
  /** Call once the engine is released, before the process ends. */
  shutdown: () => Promise<void>;
}

/**
 * @param say where the adapter line or the fallback notice goes (the CLI uses stderr, so --json stays parseable)
 * @param oneShot for a process that loads, generates up to this many tokens and ends (the CLI): wasm compiled so
 *   that its first generation runs at full speed (wasmTieringFor); WebGPU in Node always runs on Liftoff
 */
export async function nodeRuntime(
  requested: Device,
  say: (line: string) => void,
  threads = 1,
  oneShot: { maxNewTokens: number } | null = null,
): Promise<NodeRuntime> {
  if (requested === 'webgpu') {
    const gpu = await ortForNodeWebGpu();
    if (gpu.ok) {
      say(`WebGPU adapter: ${describeAdapter(gpu.adapter)}`);
      return { ort: gpu.ort, device: 'webgpu', adapter: gpu.adapter, shutdown: gpu.shutdown };
    }
    say(`WebGPU unavailable, falling back to wasm: ${gpu.reason}`);
  }
  const done = oneShot ? wasmTieringFor(oneShot.maxNewTokens) : () => {};
  return { ort: ortForNode(threads), device: 'wasm', adapter: null, shutdown: async () => done() };
}
