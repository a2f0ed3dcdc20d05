/**
 * Checkpoint tensors as graph initializers: in the compute precision (referenced in place in the safetensors bytes
 * when they already are, converted once in JS otherwise), stacked row-wise for fused projections, or quantised to
 * blockwise int4 for MatMulNBits, or to per-channel int8 for MatMulIntegerToFloat. Everything converted lands in one
 * external buffer handed to onnxruntime.
 */
import { convertFloats, type FloatDtype, f32ToF16, toFloat32 } from '../convert';
import { ModelLoadError } from '../errors';
import {
  allocInt4,
  allocInt8,
  concatInt4,
  type Int4Options,
  type Int4Weight,
  quantizeInt8Rows,
  quantizeRows,
} from '../quant';
import type { SafetensorsDtype, TensorEntry } from '../safetensors';
import { DATA_TYPE_CODE, type OnnxDataType, type OnnxGraph } from './onnx';

export const ONNX_DTYPE: Partial<Record<SafetensorsDtype, OnnxDataType>> = {
  F32: 'float32',
  F16: 'float16',
  BF16: 'bfloat16',
};

/** Name of the in-memory external-data buffer holding converted weights. */
export const CONVERTED_WEIGHTS = 'converted-weights.bin';

export interface Int4Initializers {
  codes: string;
  scales: string;
  /** null: symmetric (the kernel's default zero point 8). */
  zeroPoints: string | null;
  n: number;
  k: number;
  blockSize: number;
}

export interface Int8Initializers {
  /** [K, N] int8 */
  codes: string;
  /** [N] fp32 */
  scales: string;
  n: number;
  k: number;
}

export interface WeightStoreOptions {
  /** Put every weight in this one external buffer (an exported model.onnx_data), converted or copied. */
  weightsFile?: string;
  int4?: Int4Options;
  /**
   * fp32 initializers from fp16 checkpoint tensors (stacked or not) as the fp16 bytes in place behind a Cast (and a
   * Concat), which onnxruntime folds into fp32 constants while it creates the session, in its own wasm: no fp32 copy
   * is made in JavaScript and half the bytes are handed over. For the wasm EP, whose constant folding runs on the
   * CPU kernels it executes with; a WebGPU session is not given nodes it might run at every call.
   */
  foldHalf?: boolean;
  /** Called as int4 or int8 quantisation proceeds: elements done so far. */
  onQuantized?: (elements: number) => void;
}

/** Rows converted per step when quantising (bounds the fp32 scratch for a 150k-row LM head). */
const ROWS_PER_STEP = 1024;

export class WeightStore {
  private readonly usedFiles = new Set<string>();
  private readonly chunks: { bytes: Uint8Array; offset: number }[] = [];
  private size = 0;
  private readonly made = new Set<string>();
  private readonly int4Cache = new Map<string, Int4Initializers>();
  private readonly int8Cache = new Map<string, Int8Initializers>();
  private quantizedElements = 0;
  private readonly ownFile: string;

  constructor(
    private readonly g: OnnxGraph,
    private readonly weights: ReadonlyMap<string, TensorEntry>,
    private readonly files: ReadonlyMap<string, Uint8Array>,
    /** The compute type: float initializers are stored in it. */
    readonly T: 'float32' | 'float16',
    private readonly options: WeightStoreOptions = {},
  ) {
    this.ownFile = options.weightsFile ?? CONVERTED_WEIGHTS;
  }

  /** Bytes of weights that had to be converted, stacked or quantised (0 when all were used in place). */
  get convertedBytes(): number {
    return this.size;
  }

  entry(name: string): TensorEntry {
    const t = this.weights.get(name);
    if (!t) throw new ModelLoadError(`weights: tensor ${name} is missing`);
    return t;
  }

  private bytesOf(t: TensorEntry): Uint8Array {
    const file = this.files.get(t.file);
    if (!file) throw new ModelLoadError(`weights: ${t.name} points into ${t.file}, which was not loaded`);
    return file.subarray(t.offset, t.offset + t.byteLength);
  }

  /** Rows [row0, row0 + rows) of a 2-D (or 1-D: one row) tensor as fp32. */
  rowsAsFloat32(name: string, row0: number, rows: number): Float32Array {
    const t = this.entry(name);
    const cols = t.shape.length > 1 ? (t.shape[t.shape.length - 1] as number) : t.byteLength / dtypeBytes(t);
    const width = cols * dtypeBytes(t);
    const bytes = this.bytesOf(t).subarray(row0 * width, (row0 + rows) * width);
    return toFloat32(bytes, t.dtype as FloatDtype);
  }

  private external(bytes: Uint8Array) {
    const offset = this.size;
    this.chunks.push({ bytes, offset });
    // Keep every initializer 16-byte aligned in the buffer.
    this.size = offset + Math.ceil(bytes.byteLength / 16) * 16;
    return { location: this.ownFile, offset, length: bytes.byteLength };
  }

  /** The tensor as an initializer pointing at its bytes in the checkpoint (stored type, no copy). */
  private inPlace(t: TensorEntry, as: string): string {
    this.usedFiles.add(t.file);
    return this.g.initializer({
      name: as,
      dataType: ONNX_DTYPE[t.dtype] as OnnxDataType,
      dims: t.shape,
      external: { location: t.file, offset: t.offset, length: t.byteLength },
    });
  }

  /** Whether these tensors become an fp32 initializer through a folded Cast (options.foldHalf). */
  private folds(names: readonly string[], dtype: 'float32' | 'float16'): boolean {
    return (
      this.options.foldHalf === true &&
      !this.options.weightsFile &&
      dtype === 'float32' &&
      names.every((n) => this.entry(n).dtype === 'F16')
    );
  }

  /** The fp16 checkpoint tensor in place, once, for a folded conversion. */
  private half(name: string): string {
    const as = `${name}.f16`;
    if (this.made.has(as)) return as;
    this.made.add(as);
    return this.inPlace(this.entry(name), as);
  }

  /** A checkpoint tensor in `dtype` (default: the compute type), under its own name. */
  float(name: string, dtype: 'float32' | 'float16' = this.T, as = name): string {
    if (this.made.has(as)) return as;
    this.made.add(as);
    const t = this.entry(name);
    if (ONNX_DTYPE[t.dtype] === dtype && !this.options.weightsFile) return this.inPlace(t, as);
    if (this.folds([name], dtype))
      return this.g.preludeNode('Cast', [this.half(name)], as, { to: DATA_TYPE_CODE.float32 });
    const bytes = convertFloats(this.bytesOf(t), t.dtype as FloatDtype, dtype);
    return this.g.initializer({ name: as, dataType: dtype, dims: t.shape, external: this.external(bytes) });
  }

  /** Several [n_i, K] (or [n_i]) tensors stacked into one [sum n_i, K] initializer in the compute type (one projection). */
  floatStack(names: readonly string[], as: string): string {
    if (names.length === 1) return this.float(names[0] as string);
    if (this.made.has(as)) return as;
    this.made.add(as);
    if (this.folds(names, this.T)) {
      const stacked = this.g.preludeNode(
        'Concat',
        names.map((n) => this.half(n)),
        `${as}.f16`,
        { axis: 0 },
      );
      return this.g.preludeNode('Cast', [stacked], as, { to: DATA_TYPE_CODE.float32 });
    }
    const parts = names.map((n) =>
      convertFloats(this.bytesOf(this.entry(n)), this.entry(n).dtype as FloatDtype, this.T),
    );
    const total = parts.reduce((a, p) => a + p.byteLength, 0);
    const bytes = new Uint8Array(total);
    let at = 0;
    for (const p of parts) {
      bytes.set(p, at);
      at += p.byteLength;
    }
    const shapes = names.map((n) => this.entry(n).shape);
    const rows = shapes.reduce((a, d) => a + (d[0] as number), 0);
    const dims = [rows, ...(shapes[0] as number[]).slice(1)];
    return this.g.initializer({ name: as, dataType: this.T, dims, external: this.external(bytes) });
  }

  /** Quantise a [n, K] tensor into rows [row0, row0 + n) of `q` (a few rows at a time, reporting progress). */
  private quantizeInto<Q>(q: Q, name: string, what: string, rowsInto: QuantizeRows<Q>, row0 = 0): void {
    const [n, k] = this.matrixShape(name, what);
    for (let row = 0; row < n; row += ROWS_PER_STEP) {
      const rows = Math.min(ROWS_PER_STEP, n - row);
      rowsInto(q, this.rowsAsFloat32(name, row, rows), row0 + row);
      this.quantizedElements += rows * k;
      this.options.onQuantized?.(this.quantizedElements);
    }
  }

  private matrixShape(name: string, what: string): [number, number] {
    const t = this.entry(name);
    if (t.shape.length !== 2) throw new ModelLoadError(`${what}: ${name} is not a matrix`);
    return t.shape as [number, number];
  }

  /** Quantise one [N, K] tensor to int4 (block by block, a few rows at a time). */
  quantize(name: string): Int4Weight {
    const [n, k] = this.matrixShape(name, 'int4');
    const q = allocInt4(n, k, this.options.int4);
    this.quantizeInto(q, name, 'int4', quantizeRows);
    return q;
  }

  /**
   * MatMulIntegerToFloat's B ([K, N] int8) and per-column scales for these tensors' rows stacked, quantised once,
   * each tensor straight into its columns.
   */
  int8(names: readonly string[], as: string): Int8Initializers {
    const cached = this.int8Cache.get(as);
    if (cached) return cached;
    const shapes = names.map((name) => this.matrixShape(name, 'int8'));
    const k = (shapes[0] as [number, number])[1];
    if (shapes.some(([, kk]) => kk !== k)) throw new ModelLoadError(`int8: ${names.join(', ')} differ in K`);
    const q = allocInt8(
      shapes.reduce((sum, [n]) => sum + n, 0),
      k,
    );
    let row0 = 0;
    names.forEach((name, i) => {
      this.quantizeInto(q, name, 'int8', quantizeInt8Rows, row0);
      row0 += (shapes[i] as [number, number])[0];
    });
    const init: Int8Initializers = {
      codes: this.g.initializer({
        name: `${as}.int8`,
        dataType: 'int8',
        dims: [q.k, q.n],
        external: this.external(new Uint8Array(q.codes.buffer)),
      }),
      scales: this.g.initializer({
        name: `${as}.scales`,
        dataType: 'float32',
        dims: [q.n],
        external: this.external(new Uint8Array(q.scales.buffer)),
      }),
      n: q.n,
      k: q.k,
    };
    this.int8Cache.set(as, init);
    return init;
  }

  /** MatMulNBits initializers for the rows of these tensors stacked (one tensor: itself), quantised once. */
  int4(names: readonly string[], as: string): Int4Initializers {
    const cached = this.int4Cache.get(as);
    if (cached) return cached;
    const q = names.length === 1 ? this.quantize(names[0] as string) : concatInt4(names.map((n) => this.quantize(n)));
    const blocks = Math.ceil(q.k / q.blockSize);
    const scales =
      this.T === 'float16'
        ? new Uint8Array(Uint16Array.from(q.scales, (s) => f32ToF16(s)).buffer)
        : new Uint8Array(q.scales.buffer);
    const init: Int4Initializers = {
      codes: this.g.initializer({
        name: `${as}.int4`,
        dataType: 'uint8',
        dims: [q.n, blocks, q.blockSize / 2],
        external: this.external(q.codes),
      }),
      scales: this.g.initializer({
        name: `${as}.scales`,
        dataType: this.T,
        dims: [q.n, blocks],
        external: this.external(scales),
      }),
      zeroPoints: q.zeroPoints
        ? this.g.initializer({
            name: `${as}.zero_points`,
            dataType: 'uint8',
            dims: [q.n, Math.ceil(blocks / 2)],
            external: this.external(q.zeroPoints),
          })
        : null,
      n: q.n,
      k: q.k,
      blockSize: q.blockSize,
    };
    this.int4Cache.set(as, init);
    return init;
  }

  /** The buffers the graph's external initializers point into: pass them to ORT as `externalData`. */
  externalData(): { path: string; data: Uint8Array }[] {
    const out = [...this.usedFiles].map((path) => ({ path, data: this.files.get(path) as Uint8Array }));
    if (this.chunks.length > 0) {
      const data = new Uint8Array(this.size);
      for (const c of this.chunks) data.set(c.bytes, c.offset);
      out.push({ path: this.ownFile, data });
    }
    return out;
  }
}

type QuantizeRows<Q> = (q: Q, values: Float32Array, row0: number) => void;

function dtypeBytes(t: TensorEntry): number {
  return t.dtype === 'F32' ? 4 : 2;
}
