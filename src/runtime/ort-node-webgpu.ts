/**
 * onnxruntime-web's native WebGPU EP (`onnxruntime-web/webgpu`) in plain Node, on Dawn's official Node bindings
 * (npm `webgpu`): Dawn's GPU object becomes `navigator.gpu`, and two traps of that pairing are worked around
 * (shared/reference/webgpu-node.md). On a CPU-only machine the adapter is lavapipe (Mesa's Vulkan on the CPU); on
 * a GPU machine it is the vendor's Vulkan driver.
 *
 * Node only: never import this from code that runs in a browser.
 */
import type * as OrtWebGpu from 'onnxruntime-web/webgpu';
import { avoidTierUpStall } from './v8-tiering';
import { type AdapterReport, NO_ADAPTER, probeWebGpu } from './webgpu';

export type OrtWebGpuModule = typeof OrtWebGpu;

export interface NodeWebGpuOptions {
  /**
   * Dawn adapter selection, passed as `create(['adapter=…'])`: a substring of the adapter's name, e.g. 'NVIDIA'
   * or 'llvmpipe'. Default: the WEBGPU_ADAPTER environment variable, else Dawn's first adapter.
   */
  adapter?: string;
  /**
   * Let V8 tier ORT's wasm up to optimised code (see `avoidTierUpStall`). Default: the SPEC_DECODER_WASM_TIERUP
   * environment variable ('1'), else false.
   */
  wasmTierUp?: boolean;
  /**
   * Further flags for Dawn's `create()`, e.g. 'enable-dawn-features=skip_validation' (Dawn's toggles; the npm
   * webgpu README lists the flags). Default: the SPEC_DECODER_DAWN_FLAGS environment variable, space-separated.
   */
  dawnFlags?: string[];
}

export type NodeWebGpu =
  | { ok: true; ort: OrtWebGpuModule; adapter: AdapterReport; shutdown: () => Promise<void> }
  | { ok: false; reason: string };

const COPIES_SHARED = Symbol.for('spec-decoder.writeBufferCopiesShared');

/**
 * Dawn's `GPUQueue.writeBuffer` crashes the process (exit 139) or throws "Invalid argument" when given a view on a
 * SharedArrayBuffer, and ORT's wasm heap is shared memory, so every upload would hit it. Copy such data into a
 * plain buffer first (only the range being written).
 *
 * @internal (not in the package's declarations: its types are WebGPU's, which a user may not have)
 */
export function copySharedUploads(queuePrototype: GPUQueue): void {
  const marked = queuePrototype as GPUQueue & { [COPIES_SHARED]?: true };
  if (marked[COPIES_SHARED]) return;
  const original = queuePrototype.writeBuffer;
  queuePrototype.writeBuffer = function writeBuffer(
    this: GPUQueue,
    buffer: GPUBuffer,
    bufferOffset: number,
    data: BufferSource | SharedArrayBuffer,
    dataOffset?: number,
    size?: number,
  ): undefined {
    if (data instanceof SharedArrayBuffer) {
      const bytes = new Uint8Array(data, dataOffset ?? 0, size ?? data.byteLength - (dataOffset ?? 0));
      return original.call(this, buffer, bufferOffset, bytes.slice());
    }
    if (ArrayBuffer.isView(data) && data.buffer instanceof SharedArrayBuffer) {
      // Offsets and sizes count elements of a typed array and bytes of a DataView: slice in the same unit.
      const view =
        data instanceof DataView ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : (data as Uint8Array);
      const start = dataOffset ?? 0;
      const end = size === undefined ? view.length : start + size;
      return original.call(this, buffer, bufferOffset, view.slice(start, end));
    }
    return original.call(this, buffer, bufferOffset, data as BufferSource, dataOffset, size);
  } as GPUQueue['writeBuffer'];
  marked[COPIES_SHARED] = true;
}

/*
 * The tier-up stall with WebGPU (v8-tiering.ts): ORT's 27 MB asyncify wasm, and the event loop empty while ORT
 * awaits a GPU promise between Dawn's polls. Measured on our 2-core machine with the bundled pair on lavapipe
 * (first 8-token greedy run / whole script including load and release; noisy, shared machine):
 *   default tiering                   48.5 s / 62 s
 *   --liftoff-only                     7.0 s / 22 s   (ends right after release)
 *   keep-alive interval (tier-up on)   9.5 s / 27 s   before release, then 43 s to 3 min more to end
 *   --no-wasm-tier-up                 93 s  / 112 s
 *   --no-wasm-dynamic-tiering        125 s  / 149 s
 * We pick Liftoff only (avoidTierUpStall(false)): no stall, and the process ends by itself. Its price is slower
 * CPU-side ORT code: on a dispatch-bound tiny model, 19-27 ms per call against 13-15 ms once tiered up (same
 * machine, noisy), which matters on a real GPU. The benchmark can measure it:
 * SPEC_DECODER_WASM_TIERUP=1 keeps tier-up and holds the event loop awake with an interval until shutdown(); a
 * process in that mode must call process.exit() at its end (the GPU kit's entry, bench/gpu-kit.ts, does).
 */

/** One line: Dawn's own message lists the adapters it saw on several lines. */
function noAdapterReason(dawnMessage: string, adapterName: string | undefined): string {
  const seen = [...dawnMessage.matchAll(/name: '([^']*)'/g)].map((m) => m[1]);
  if (adapterName) {
    return `${NO_ADAPTER} matching "${adapterName}" (WEBGPU_ADAPTER); Dawn found: ${seen.join(', ') || 'none'}`;
  }
  return `${NO_ADAPTER}: Dawn found no Vulkan adapter (a GPU needs its vendor's Vulkan driver; a CPU-only machine needs lavapipe, Mesa >= 23, which \`npm test\` installs as root)`;
}

let installed: Promise<NodeWebGpu> | null = null;

/**
 * Install Dawn as `navigator.gpu` and load onnxruntime-web's WebGPU build; once per process (later calls return
 * the first result). Returns a reason instead of throwing when there is no usable adapter.
 */
export function ortForNodeWebGpu(options: NodeWebGpuOptions = {}): Promise<NodeWebGpu> {
  installed ??= install(options);
  return installed;
}

async function install(options: NodeWebGpuOptions): Promise<NodeWebGpu> {
  let dawn: { create: (flags: string[]) => GPU; globals: object };
  try {
    dawn = (await import('webgpu')) as typeof dawn;
  } catch (e) {
    return { ok: false, reason: `${NO_ADAPTER}: Dawn's bindings (npm webgpu) did not load: ${(e as Error).message}` };
  }
  const adapterName = options.adapter ?? process.env.WEBGPU_ADAPTER;
  const extra = options.dawnFlags ?? (process.env.SPEC_DECODER_DAWN_FLAGS ?? '').split(/\s+/).filter(Boolean);
  const gpu = dawn.create([...(adapterName ? [`adapter=${adapterName}`] : []), ...extra]);
  const probe = await probeWebGpu(gpu);
  if (!probe.ok) return { ok: false, reason: noAdapterReason(probe.reason, adapterName) };
  // ORT reads the WebGPU constants (GPUBufferUsage, GPUMapMode, …) as globals and the GPU as navigator.gpu.
  for (const [name, value] of Object.entries(dawn.globals)) {
    if (!(name in globalThis)) Object.defineProperty(globalThis, name, { value, configurable: true, writable: true });
  }
  if (typeof globalThis.navigator === 'undefined') {
    Object.defineProperty(globalThis, 'navigator', { value: { gpu }, configurable: true, writable: true });
  } else {
    Object.defineProperty(globalThis.navigator, 'gpu', { value: gpu, configurable: true });
  }
  copySharedUploads((dawn.globals as { GPUQueue: { prototype: GPUQueue } }).GPUQueue.prototype);
  const stopKeepAlive = avoidTierUpStall(options.wasmTierUp ?? process.env.SPEC_DECODER_WASM_TIERUP === '1');
  const ort = await import('onnxruntime-web/webgpu');
  ort.env.wasm.numThreads = 1;
  ort.env.logLevel = 'error';
  let down = false;
  return {
    ok: true,
    ort,
    adapter: probe.adapter,
    // Sessions must be released first. Without tier-up nothing holds the process; with it the interval goes.
    shutdown: async () => {
      if (down) return;
      down = true;
      stopKeepAlive();
    },
  };
}
