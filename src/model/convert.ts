/** Float formats: half and bfloat16 bits to and from fp32, and whole-tensor conversion for weights. */

export type FloatDtype = 'F32' | 'F16' | 'BF16';

/** Decode one IEEE half-precision value. */
export function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * 2 ** -14 * (frac / 1024);
  if (exp === 31) return frac ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * 2 ** (exp - 15) * (1 + frac / 1024);
}

const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/** Round an fp32 value to IEEE half precision bits (round to nearest even). */
export function f32ToF16(value: number): number {
  f32Scratch[0] = value;
  const x = u32Scratch[0] as number;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rem > mid || (rem === mid && half & 1)) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && half & 1)) half++; // a carry into the exponent is correct rounding
  return sign | half;
}

/** Round an fp32 value to bfloat16 bits (round to nearest even). */
export function f32ToBf16(value: number): number {
  f32Scratch[0] = value;
  const x = u32Scratch[0] as number;
  if ((x & 0x7f800000) === 0x7f800000 && x & 0x7fffff) return (x >>> 16) | 0x40;
  return ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
}

let f16Table: Float32Array | undefined;

/** All 65536 half-precision values as fp32: conversion becomes one table lookup per weight. */
function halfTable(): Float32Array {
  if (!f16Table) {
    f16Table = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) f16Table[h] = f16ToF32(h);
  }
  return f16Table;
}

function view<T extends Uint16Array | Float32Array>(
  ctor: { new (b: ArrayBuffer, o: number, n: number): T; BYTES_PER_ELEMENT: number },
  bytes: Uint8Array,
): T {
  const n = bytes.byteLength / ctor.BYTES_PER_ELEMENT;
  // Typed-array views need aligned offsets; copy the (rare) unaligned tensor first.
  const src = bytes.byteOffset % ctor.BYTES_PER_ELEMENT === 0 ? bytes : bytes.slice();
  return new ctor(src.buffer as ArrayBuffer, src.byteOffset, n);
}

/** Decode stored floats to fp32. */
export function toFloat32(bytes: Uint8Array, dtype: FloatDtype): Float32Array {
  if (dtype === 'F32') return Float32Array.from(view(Float32Array, bytes));
  const src = view(Uint16Array, bytes);
  const out = new Float32Array(src.length);
  if (dtype === 'F16') {
    const table = halfTable();
    for (let i = 0; i < src.length; i++) out[i] = table[src[i] as number] as number;
  } else {
    const bits = new Uint32Array(out.buffer);
    for (let i = 0; i < src.length; i++) bits[i] = (src[i] as number) << 16;
  }
  return out;
}

/** Stored floats converted to the bytes of an fp32 or fp16 tensor. */
export function convertFloats(bytes: Uint8Array, from: FloatDtype, to: 'float32' | 'float16'): Uint8Array {
  if (to === 'float32') return new Uint8Array(toFloat32(bytes, from).buffer);
  if (from === 'F16') return bytes;
  const f32 = toFloat32(bytes, from);
  const out = new Uint16Array(f32.length);
  for (let i = 0; i < f32.length; i++) out[i] = f32ToF16(f32[i] as number);
  return new Uint8Array(out.buffer);
}
