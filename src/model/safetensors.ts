/**
 * safetensors parsing: the header (8-byte little-endian length, then JSON), tensor views into the unchanged file
 * bytes, and checks that turn a truncated or malformed file into a clear error.
 */
import { ModelLoadError } from './errors';

export type SafetensorsDtype = 'F32' | 'F16' | 'BF16' | 'I64' | 'I32' | 'U8' | 'BOOL' | 'F64' | 'I8' | 'I16';

export const DTYPE_BYTES: Record<SafetensorsDtype, number> = {
  F64: 8,
  F32: 4,
  F16: 2,
  BF16: 2,
  I64: 8,
  I32: 4,
  I16: 2,
  I8: 1,
  U8: 1,
  BOOL: 1,
};

export interface TensorEntry {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  /** The file this tensor lives in (for sharded checkpoints). */
  file: string;
  /** Absolute byte offset of the tensor's data within the file. */
  offset: number;
  byteLength: number;
}

export interface SafetensorsFile {
  file: string;
  bytes: Uint8Array;
  tensors: Map<string, TensorEntry>;
  metadata: Record<string, string>;
}

export function parseSafetensors(file: string, bytes: Uint8Array): SafetensorsFile {
  if (bytes.byteLength < 8) {
    throw new ModelLoadError(
      `${file}: truncated safetensors file (${bytes.byteLength} bytes, not even a header length)`,
    );
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = Number(view.getBigUint64(0, true));
  if (8 + headerLength > bytes.byteLength) {
    throw new ModelLoadError(
      `${file}: truncated safetensors file (header says ${headerLength} bytes of JSON, file has ${bytes.byteLength - 8})`,
    );
  }
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLength)));
  } catch (e) {
    throw new ModelLoadError(`${file}: not a safetensors file (header is not JSON: ${(e as Error).message})`);
  }
  const dataStart = 8 + headerLength;
  const dataLength = bytes.byteLength - dataStart;
  const tensors = new Map<string, TensorEntry>();
  let metadata: Record<string, string> = {};
  for (const [name, raw] of Object.entries(header)) {
    if (name === '__metadata__') {
      metadata = (raw ?? {}) as Record<string, string>;
      continue;
    }
    const info = raw as { dtype?: string; shape?: number[]; data_offsets?: [number, number] };
    const dtype = info.dtype as SafetensorsDtype;
    if (!(dtype in DTYPE_BYTES))
      throw new ModelLoadError(`${file}: tensor ${name} has unsupported dtype ${info.dtype}`);
    const shape = info.shape ?? [];
    const [begin, end] = info.data_offsets ?? [Number.NaN, Number.NaN];
    const elements = shape.reduce((a, b) => a * b, 1);
    if (!(begin >= 0 && end >= begin) || end - begin !== elements * DTYPE_BYTES[dtype]) {
      throw new ModelLoadError(
        `${file}: tensor ${name} has inconsistent data_offsets [${begin}, ${end}] for ${dtype}[${shape.join(', ')}]`,
      );
    }
    if (end > dataLength) {
      throw new ModelLoadError(
        `${file}: truncated safetensors file (tensor ${name} ends at byte ${dataStart + end}, file has ${bytes.byteLength})`,
      );
    }
    tensors.set(name, { name, dtype, shape, file, offset: dataStart + begin, byteLength: end - begin });
  }
  return { file, bytes, tensors, metadata };
}

/** Decode one IEEE half-precision value. */
export function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * 2 ** -14 * (frac / 1024);
  if (exp === 31) return frac ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * 2 ** (exp - 15) * (1 + frac / 1024);
}

/** Read a tensor as fp32 (a copy; used by tests and small tensors, not on the weight-loading path). */
export function readAsFloat32(st: SafetensorsFile, name: string): Float32Array {
  const t = st.tensors.get(name);
  if (!t) throw new ModelLoadError(`${st.file}: no tensor named ${name}`);
  const count = t.byteLength / DTYPE_BYTES[t.dtype];
  const view = new DataView(st.bytes.buffer, st.bytes.byteOffset + t.offset, t.byteLength);
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) {
    if (t.dtype === 'F32') out[i] = view.getFloat32(i * 4, true);
    else if (t.dtype === 'F16') out[i] = f16ToF32(view.getUint16(i * 2, true));
    else if (t.dtype === 'BF16') {
      const u = new Uint32Array([view.getUint16(i * 2, true) << 16]);
      out[i] = new Float32Array(u.buffer)[0] as number;
    } else throw new ModelLoadError(`${st.file}: tensor ${name} is ${t.dtype}, not a float type`);
  }
  return out;
}

/** Write a safetensors file (tests and tools use it to make fixtures). */
export function writeSafetensors(
  tensors: { name: string; dtype: SafetensorsDtype; shape: number[]; data: Uint8Array }[],
  metadata: Record<string, string> = { format: 'pt' },
): Uint8Array {
  const header: Record<string, unknown> = { __metadata__: metadata };
  let offset = 0;
  for (const t of tensors) {
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + t.data.byteLength] };
    offset += t.data.byteLength;
  }
  let json = JSON.stringify(header);
  while ((8 + json.length) % 8 !== 0) json += ' ';
  const headerBytes = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + headerBytes.byteLength + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerBytes.byteLength), true);
  out.set(headerBytes, 8);
  let at = 8 + headerBytes.byteLength;
  for (const t of tensors) {
    out.set(t.data, at);
    at += t.data.byteLength;
  }
  return out;
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
