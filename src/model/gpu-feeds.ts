/**
 * Model inputs written straight into GPU buffers, on WebGPU. onnxruntime's WebGPU EP uploads each CPU input of a call
 * through a new staging buffer and a submit of its own; on an H100 through Dawn that costs about 1 ms an input (the
 * GPU kit's transfer probe: ten inputs 12.1 ms a call, the same rows as one input 4.5 ms). Here each input name
 * keeps one GPU buffer (grown by doubling) that `queue.writeBuffer` fills before the call: Dawn stages those writes
 * with the next submit, so an input costs a copy and no submit of its own. The write is ordered on the queue after
 * the previous call's work, so reusing the buffer call after call is safe.
 *
 * Only inputs that GPU kernels read belong here: an input that a CPU kernel reads (a shape, TopK's k, positions cast
 * on the CPU) would make onnxruntime download it again.
 */
import type * as OrtModule from 'onnxruntime-web';
import type { Device } from './precision';

type Ort = Pick<typeof OrtModule, 'Tensor'> & Partial<Pick<typeof OrtModule, 'env'>>;
export type FeedData = Float32Array | Uint16Array | BigInt64Array | Uint8Array | Int32Array;
type FeedType = 'float32' | 'float16' | 'int64' | 'bool' | 'int32';

// GPUBufferUsage.STORAGE | COPY_SRC | COPY_DST (numbers: Node has no GPUBufferUsage global before Dawn loads).
const USAGE = 0x80 | 0x04 | 0x08;

export class GpuFeeds {
  private readonly buffers = new Map<string, GPUBuffer>();

  private constructor(
    private readonly ort: Ort,
    private readonly device: GPUDevice,
  ) {}

  /** Feeds on onnxruntime's own GPU device (known once a WebGPU session exists), or null where there is none. */
  static async of(ort: Ort): Promise<GpuFeeds | null> {
    const device = (await (ort.env?.webgpu as { device?: unknown } | undefined)?.device) as GPUDevice | undefined;
    return device ? new GpuFeeds(ort, device) : null;
  }

  /** A tensor over `name`'s GPU buffer holding `data` (written now). */
  gpuTensor(name: string, type: FeedType, data: FeedData, dims: readonly number[]): OrtModule.Tensor {
    const bytes = data.byteLength;
    // writeBuffer takes whole 4-byte words: bool rows (one byte each) are copied into a padded array.
    const padded = (bytes + 3) & ~3;
    let buffer = this.buffers.get(name);
    if (!buffer || buffer.size < Math.max(padded, 4)) {
      buffer?.destroy();
      let size = 64;
      while (size < padded) size *= 2;
      buffer = this.device.createBuffer({ size, usage: USAGE, label: `feed ${name}` });
      this.buffers.set(name, buffer);
    }
    if (padded > 0) {
      const view = new Uint8Array(data.buffer, data.byteOffset, bytes);
      const shared = typeof SharedArrayBuffer !== 'undefined' && data.buffer instanceof SharedArrayBuffer;
      const source = padded === bytes && !shared ? view : copyPadded(view, padded);
      this.device.queue.writeBuffer(buffer, 0, source.buffer, source.byteOffset, padded);
    }
    return this.ort.Tensor.fromGpuBuffer(buffer, { dataType: type, dims }) as OrtModule.Tensor;
  }

  dispose(): void {
    for (const b of this.buffers.values()) b.destroy();
    this.buffers.clear();
  }
}

/**
 * A model's feeds: the inputs named at creation written into GPU buffers (on WebGPU, where onnxruntime's device is
 * known), every other input, or all of them elsewhere, as CPU tensors. SPEC_DECODER_GPU_FEEDS=0 in Node's
 * environment, or globalThis.SPEC_DECODER_GPU_FEEDS = '0' in a page or worker, gives every input from the CPU to the
 * models loaded after it, for measuring what the GPU buffers save.
 */
export class Feeds {
  private constructor(
    private readonly ort: Ort,
    private readonly gpu: GpuFeeds | null,
    private readonly onGpu: ReadonlySet<string>,
  ) {}

  static async open(ort: Ort, device: Device, onGpu: readonly string[]): Promise<Feeds> {
    const flag = (globalThis as { SPEC_DECODER_GPU_FEEDS?: string }).SPEC_DECODER_GPU_FEEDS;
    const off = flag === '0' || (typeof process !== 'undefined' && process.env?.SPEC_DECODER_GPU_FEEDS === '0');
    const gpu = device === 'webgpu' && !off && onGpu.length > 0 ? await GpuFeeds.of(ort) : null;
    return new Feeds(ort, gpu, new Set(onGpu));
  }

  /** Input `name` holding `data`: over its GPU buffer if it is one of the GPU-fed inputs, else a CPU tensor. */
  tensor(name: string, type: FeedType, data: FeedData, dims: readonly number[]): OrtModule.Tensor {
    return this.gpu && this.onGpu.has(name) && data.byteLength > 0
      ? this.gpu.gpuTensor(name, type, data, dims)
      : (new this.ort.Tensor(type, data, dims) as OrtModule.Tensor);
  }

  dispose(): void {
    this.gpu?.dispose();
  }
}

const LITTLE_ENDIAN = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;

/**
 * Integers as the int64 data of a feed. Those that fit 32 bits (token ids, positions, cache slots: all of them in
 * practice) are written as two 32-bit words, with no BigInt: every call feeds the cache's keep list (one index per
 * cached token), and BigInt conversion took 7 us for 160 of them, two 32-bit words 1 us.
 */
export function int64s(values: ArrayLike<number>): BigInt64Array {
  const n = values.length;
  const out = new BigInt64Array(n);
  const words = new Int32Array(out.buffer);
  for (let i = 0; i < n; i++) {
    const v = values[i] as number;
    if (LITTLE_ENDIAN && v === (v | 0)) {
      words[2 * i] = v;
      words[2 * i + 1] = v < 0 ? -1 : 0;
    } else out[i] = BigInt(v);
  }
  return out;
}

function copyPadded(view: Uint8Array, size: number): Uint8Array {
  const out = new Uint8Array(size);
  out.set(view);
  return out;
}
