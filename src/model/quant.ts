/**
 * Blockwise 4-bit weight quantisation in the layout of onnxruntime's com.microsoft MatMulNBits: a weight W [N, K]
 * (the checkpoint's [out, in]) is cut into blocks of `blockSize` consecutive values along K; each block keeps one
 * scale and stores its values as 4-bit codes, two per byte, the first value in the low nibble.
 *
 *   dequantised w = (code - zeroPoint) * scale
 *
 * Symmetric (no zero points): the zero point is the default 8 and the scale maps the block's value of largest
 * magnitude onto code 0 (-8 * scale), so the whole range [-8, 7] is used and that value is exact. Asymmetric (zero
 * points): the block's range [min(0, lo), max(0, hi)] is spread over codes 0..15 with a per-block zero point
 * (packed two per byte like the codes), so zero stays exact. Blocks past the end of K are padded with zeros.
 */

export interface Int4Options {
  /** Values per block along K (a power of two >= 16; MatMulNBits' fast paths use 32). */
  blockSize?: number;
  /** Store a zero point per block (asymmetric) instead of the default 8 (symmetric). */
  zeroPoints?: boolean;
}

export interface Int4Weight {
  n: number;
  k: number;
  blockSize: number;
  /** [N, kBlocks, blockSize / 2] */
  codes: Uint8Array;
  /** [N, kBlocks] */
  scales: Float32Array;
  /** [N, ceil(kBlocks / 2)], or null (symmetric: every zero point is 8). */
  zeroPoints: Uint8Array | null;
}

export const DEFAULT_BLOCK = 32;

export function kBlocks(k: number, blockSize: number): number {
  return Math.ceil(k / blockSize);
}

/** An empty quantised weight of this shape, filled row range by row range with quantizeRows. */
export function allocInt4(n: number, k: number, options: Int4Options = {}): Int4Weight {
  const blockSize = options.blockSize ?? DEFAULT_BLOCK;
  if (blockSize < 16 || (blockSize & (blockSize - 1)) !== 0) {
    throw new RangeError(`int4 block size ${blockSize} must be a power of two >= 16`);
  }
  const blocks = kBlocks(k, blockSize);
  return {
    n,
    k,
    blockSize,
    codes: new Uint8Array(n * blocks * (blockSize / 2)),
    scales: new Float32Array(n * blocks),
    zeroPoints: options.zeroPoints ? new Uint8Array(n * Math.ceil(blocks / 2)) : null,
  };
}

/** Quantise rows [row0, row0 + rows) from `values` (those rows, row-major [rows, K]) into `q`. */
export function quantizeRows(q: Int4Weight, values: Float32Array, row0: number): void {
  const { k, blockSize } = q;
  const blocks = kBlocks(k, blockSize);
  const rows = values.length / k;
  const half = blockSize / 2;
  const zpRow = Math.ceil(blocks / 2);
  const block = new Float32Array(blockSize);
  for (let r = 0; r < rows; r++) {
    const row = row0 + r;
    for (let b = 0; b < blocks; b++) {
      const start = b * blockSize;
      const len = Math.min(blockSize, k - start);
      block.fill(0);
      block.set(values.subarray(r * k + start, r * k + start + len));
      let scale: number;
      let zp = 8;
      if (q.zeroPoints) {
        let lo = 0;
        let hi = 0;
        for (let i = 0; i < blockSize; i++) {
          const v = block[i] as number;
          if (v < lo) lo = v;
          if (v > hi) hi = v;
        }
        scale = (hi - lo) / 15;
        zp = scale > 0 ? Math.min(15, Math.max(0, Math.round(-lo / scale))) : 8;
        const at = row * zpRow + (b >> 1);
        q.zeroPoints[at] = (q.zeroPoints[at] as number) | (b & 1 ? zp << 4 : zp);
      } else {
        let extreme = 0;
        for (let i = 0; i < blockSize; i++) {
          const v = block[i] as number;
          if (Math.abs(v) > Math.abs(extreme)) extreme = v;
        }
        scale = extreme / -8;
      }
      // The scale is stored (and used by the kernel) in fp32: quantise against exactly that value.
      scale = Math.fround(scale);
      q.scales[row * blocks + b] = scale;
      const inv = scale !== 0 ? 1 / scale : 0;
      const out = (row * blocks + b) * half;
      for (let i = 0; i < half; i++) {
        const lo = Math.min(15, Math.max(0, Math.round((block[2 * i] as number) * inv) + zp));
        const hi = Math.min(15, Math.max(0, Math.round((block[2 * i + 1] as number) * inv) + zp));
        q.codes[out + i] = lo | (hi << 4);
      }
    }
  }
}

/** Quantise a whole [N, K] weight. */
export function quantizeInt4(values: Float32Array, n: number, k: number, options: Int4Options = {}): Int4Weight {
  if (values.length !== n * k) throw new RangeError(`quantizeInt4: ${values.length} values for [${n}, ${k}]`);
  const q = allocInt4(n, k, options);
  quantizeRows(q, values, 0);
  return q;
}

/** The fp32 values the kernel computes with, [N, K] (tests and the float64 reference use them). */
export function dequantizeInt4(q: Int4Weight): Float32Array {
  const { n, k, blockSize } = q;
  const blocks = kBlocks(k, blockSize);
  const half = blockSize / 2;
  const zpRow = Math.ceil(blocks / 2);
  const out = new Float32Array(n * k);
  for (let row = 0; row < n; row++) {
    for (let b = 0; b < blocks; b++) {
      const scale = q.scales[row * blocks + b] as number;
      let zp = 8;
      if (q.zeroPoints) {
        const byte = q.zeroPoints[row * zpRow + (b >> 1)] as number;
        zp = b & 1 ? byte >> 4 : byte & 15;
      }
      for (let i = 0; i < half; i++) {
        const byte = q.codes[(row * blocks + b) * half + i] as number;
        const c0 = b * blockSize + 2 * i;
        if (c0 < k) out[row * k + c0] = ((byte & 15) - zp) * scale;
        if (c0 + 1 < k) out[row * k + c0 + 1] = ((byte >> 4) - zp) * scale;
      }
    }
  }
  return out;
}

/** Rows of several quantised weights with the same K stacked into one (a fused projection). */
export function concatInt4(parts: readonly Int4Weight[]): Int4Weight {
  const first = parts[0];
  if (!first) throw new RangeError('concatInt4: nothing to concatenate');
  for (const p of parts) {
    if (p.k !== first.k || p.blockSize !== first.blockSize || !p.zeroPoints !== !first.zeroPoints) {
      throw new RangeError('concatInt4: parts differ in K, block size or zero points');
    }
  }
  const n = parts.reduce((a, p) => a + p.n, 0);
  const out = allocInt4(n, first.k, { blockSize: first.blockSize, zeroPoints: first.zeroPoints !== null });
  let codes = 0;
  let scales = 0;
  let zps = 0;
  for (const p of parts) {
    out.codes.set(p.codes, codes);
    out.scales.set(p.scales, scales);
    if (p.zeroPoints && out.zeroPoints) out.zeroPoints.set(p.zeroPoints, zps);
    codes += p.codes.length;
    scales += p.scales.length;
    zps += p.zeroPoints?.length ?? 0;
  }
  return out;
}

/**
 * Per-channel 8-bit weights for onnxruntime's MatMulIntegerToFloat (the int8 precision on wasm, where MLAS has a
 * SIMD uint8 x int8 kernel and none for 4 bits): each output row of W [N, K] keeps one fp32 scale (its largest
 * magnitude over 127) and symmetric codes in [-127, 127], zero point 0. The codes are stored as MatMul's B, [K, N]:
 * rows quantised one range at a time land in their columns, so stacked projections are quantised in place, with no
 * copy to concatenate or transpose.
 *
 *   dequantised w[row, i] = codes[i * N + row] * scales[row]
 */
export interface Int8Weight {
  n: number;
  k: number;
  /** [K, N] (MatMul's B: the transpose of the checkpoint's [N, K]) */
  codes: Int8Array;
  /** [N] */
  scales: Float32Array;
}

export function allocInt8(n: number, k: number): Int8Weight {
  return { n, k, codes: new Int8Array(n * k), scales: new Float32Array(n) };
}

/** Quantise rows [row0, row0 + rows) from `values` (those rows, row-major [rows, K]) into `q`. */
export function quantizeInt8Rows(q: Int8Weight, values: Float32Array, row0: number): void {
  const { n, k } = q;
  const rows = values.length / k;
  for (let r = 0; r < rows; r++) {
    let max = 0;
    for (let i = 0; i < k; i++) max = Math.max(max, Math.abs(values[r * k + i] as number));
    // Stored and used in fp32: quantise against exactly that value.
    const scale = Math.fround(max / 127);
    const row = row0 + r;
    q.scales[row] = scale;
    const inv = scale !== 0 ? 1 / scale : 0;
    for (let i = 0; i < k; i++) {
      q.codes[i * n + row] = Math.min(127, Math.max(-127, Math.round((values[r * k + i] as number) * inv)));
    }
  }
}

export function quantizeInt8(values: Float32Array, n: number, k: number): Int8Weight {
  if (values.length !== n * k) throw new RangeError(`quantizeInt8: ${values.length} values for [${n}, ${k}]`);
  const q = allocInt8(n, k);
  quantizeInt8Rows(q, values, 0);
  return q;
}

/** The fp32 values the kernel computes with, [N, K] (the checkpoint's layout). */
export function dequantizeInt8(q: Int8Weight): Float32Array {
  const out = new Float32Array(q.n * q.k);
  for (let row = 0; row < q.n; row++) {
    const scale = q.scales[row] as number;
    for (let i = 0; i < q.k; i++) out[row * q.k + i] = (q.codes[i * q.n + row] as number) * scale;
  }
  return out;
}

/** The smallest activation-row scale the int8 graph uses (an all-zero row quantises without dividing by zero). */
export const INT8_MIN_SCALE = 1e-30;

/**
 * What the int8 graph does to an activation row before its integer matmul (per row, so a row's result never
 * depends on the other rows of a call: a tree call equals its paths run alone): scale = max|x| / 127 (at least
 * INT8_MIN_SCALE), code = round-half-even(x / scale) + 128 as uint8 with zero point 128. Returns the dequantised row.
 */
export function quantizeActivationRow(x: ArrayLike<number>): Float64Array {
  let max = 0;
  for (let i = 0; i < x.length; i++) max = Math.max(max, Math.abs(Math.fround(x[i] as number)));
  const scale = Math.fround(Math.max(Math.fround(max * Math.fround(1 / 127)), INT8_MIN_SCALE));
  const out = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) {
    const code = Math.min(127, Math.max(-128, roundHalfEven(Math.fround(x[i] as number) / scale)));
    out[i] = code * scale;
  }
  return out;
}

function roundHalfEven(v: number): number {
  const r = Math.round(v);
  return Math.abs(v % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}
