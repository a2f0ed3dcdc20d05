/**
 * For the tests that run on WebGPU in Node (Dawn; lavapipe on CPU-only machines): the runtime, or the reason they
 * are skipped. They skip only when Dawn finds no adapter; when the bootstrap found or installed one
 * (NODE_WEBGPU_EXPECTED=1, set by `npm test`), a missing adapter fails instead.
 */
import { type NodeWebGpu, ortForNodeWebGpu } from '../ort-node-webgpu';
import { describeAdapter } from '../webgpu';

export const nodeWebGpu: NodeWebGpu = await ortForNodeWebGpu();

if (!nodeWebGpu.ok) {
  if (process.env.NODE_WEBGPU_EXPECTED === '1') {
    throw new Error(`the bootstrap found a Vulkan adapter, but WebGPU in Node has none now: ${nodeWebGpu.reason}`);
  }
  console.warn(`Skipping the Node WebGPU tests: ${nodeWebGpu.reason}`);
}

/** A describe() title that names the adapter, or says why the block is skipped. */
export function webGpuTitle(what: string): string {
  return nodeWebGpu.ok
    ? `${what} (WebGPU in Node: ${describeAdapter(nodeWebGpu.adapter)})`
    : `${what} (SKIPPED: ${nodeWebGpu.reason})`;
}

/** onnxruntime-web's WebGPU build, for use inside a describe.skipIf(!nodeWebGpu.ok) block. */
export function webGpuOrt(): Extract<NodeWebGpu, { ok: true }>['ort'] {
  if (!nodeWebGpu.ok) throw new Error(nodeWebGpu.reason);
  return nodeWebGpu.ort;
}
