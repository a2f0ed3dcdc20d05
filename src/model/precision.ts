/**
 * What `precision` means for a model on a device: how the weights are stored (float, blockwise int4 or per-channel
 * int8) and what type the arithmetic runs in (fp32, or fp16 where the device computes it natively).
 *
 *   fp32  float weights, fp32 compute
 *   fp16  float weights, fp16 compute (WebGPU needs shader-f16; on wasm it is emulated and slow, for tests)
 *   int4  int4 weights (MatMulNBits), fp16 compute on a WebGPU adapter with shader-f16, fp32 elsewhere. On wasm
 *         onnxruntime has no 4-bit kernel (every call dequantises the whole weight): small, not fast
 *   int8  int8 weights, activations quantised per row (MatMulIntegerToFloat, MLAS's uint8 x int8 SIMD kernel), fp32
 *         compute; wasm only (the WebGPU EP has no integer matmul)
 *   auto  on WebGPU: the compute type the device does best (fp16 with shader-f16, else fp32), float weights unless
 *         they would not fit (more than AUTO_INT4_BYTES in that type: browsers cap single GPU buffers and tabs well
 *         below a 1.7B model in fp32), then int4. On wasm: fp32 for models up to AUTO_INT8_WASM_BYTES of fp32
 *         weights (the bundled pair and the test models, which are checked against fp32 references), int8 above
 *         (SmolLM2-135M's shape decodes 1.4x faster; on the bundled target int8 costs 0.0006 nats of held-out loss
 *         and speculation stays token-for-token plain int8 decoding), int4 when even int8 would exceed
 *         AUTO_INT4_BYTES (a wasm heap is 4 GB at most)
 */
import { expectedWeights, type LlamaConfig } from './config';
import type { ComputeType, WeightFormat } from './graph/llama';

export type Precision = 'fp32' | 'fp16' | 'int4' | 'int8' | 'auto';
export const PRECISIONS: readonly Precision[] = ['fp32', 'fp16', 'int4', 'int8', 'auto'];

export type Device = 'wasm' | 'webgpu';

export interface ResolvedPrecision {
  weights: WeightFormat;
  compute: ComputeType;
}

/** Weights above this many bytes (float on WebGPU, int8 on wasm) make `auto` choose int4. */
export const AUTO_INT4_BYTES = 2 * 2 ** 30;
/** fp32 weights above this many bytes make `auto` choose int8 on wasm (SmolLM2-135M: 538 MB; the bundled target: 57). */
export const AUTO_INT8_WASM_BYTES = 256 * 2 ** 20;

/** fp16 where the device computes it natively (WebGPU with shader-f16), fp32 everywhere else. */
export async function chooseCompute(device: Device): Promise<ComputeType> {
  if (device !== 'webgpu') return 'fp32';
  const adapter = await globalThis.navigator?.gpu?.requestAdapter();
  return adapter?.features.has('shader-f16') ? 'fp16' : 'fp32';
}

export function parameterCount(cfg: LlamaConfig): number {
  let n = 0;
  for (const shape of expectedWeights(cfg).values()) n += shape.reduce((a, b) => a * b, 1);
  return n;
}

/** Resolve a requested precision; `native` is what chooseCompute says for the device. */
export function resolvePrecision(
  requested: Precision,
  cfg: LlamaConfig,
  native: ComputeType,
  device: Device = 'wasm',
): ResolvedPrecision {
  switch (requested) {
    case 'fp32':
      return { weights: 'float', compute: 'fp32' };
    case 'fp16':
      return { weights: 'float', compute: 'fp16' };
    case 'int4':
      return { weights: 'int4', compute: native };
    case 'int8':
      if (device === 'webgpu') {
        throw new RangeError(
          "precision int8 runs on wasm only (onnxruntime's WebGPU EP has no integer matmul): use int4 on WebGPU",
        );
      }
      return { weights: 'int8', compute: 'fp32' };
    case 'auto': {
      const params = parameterCount(cfg);
      if (device === 'wasm') {
        if (params * 4 <= AUTO_INT8_WASM_BYTES) return { weights: 'float', compute: native };
        return { weights: params <= AUTO_INT4_BYTES ? 'int8' : 'int4', compute: 'fp32' };
      }
      if (params * (native === 'fp16' ? 2 : 4) <= AUTO_INT4_BYTES) return { weights: 'float', compute: native };
      return { weights: 'int4', compute: native };
    }
    default:
      throw new RangeError(`precision "${String(requested)}" is not one of ${PRECISIONS.join(', ')}`);
  }
}

/** The label of a resolved precision: 'fp32', 'fp16', 'int8', 'int4' (fp32 compute) or 'int4-fp16'. */
export function precisionLabel(p: ResolvedPrecision): string {
  if (p.weights === 'float') return p.compute;
  if (p.weights === 'int8') return 'int8';
  return p.compute === 'fp16' ? 'int4-fp16' : 'int4';
}
