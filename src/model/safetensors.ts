/**
 * safetensors parsing: the header (8-byte little-endian length, then JSON), tensor views into the unchanged file
 * bytes, and checks that turn a truncated or malformed file into a clear error.
 */
import { toFloat32 } from './convert';
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
  // Real headers are kilobytes to a few megabytes; a length past 100 MB is a damaged length field, not a short file.
  if (headerLength > 100_000_000) {
    throw new ModelLoadError(
      `${file}: corrupt safetensors header (its length field says ${headerLength} bytes; the file has ${bytes.byteLength})`,
    );
  }
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

/**
 * Index of the first NaN or infinite element of a float tensor (F32, F16, BF16), or -1: a corrupt weight file
 * otherwise loads fine and produces NaN logits, i.e. garbage text. One pass over the bytes, no copy.
 */
export function firstNonFinite(bytes: Uint8Array, t: TensorEntry): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset + t.offset, t.byteLength);
  if (t.dtype === 'F32') {
    for (let i = 0; i < t.byteLength / 4; i++) if (!Number.isFinite(view.getFloat32(4 * i, true))) return i;
    return -1;
  }
  if (t.dtype !== 'F16' && t.dtype !== 'BF16') return -1;
  // All exponent bits set means infinity or NaN.
  const exponent = t.dtype === 'F16' ? 0x7c00 : 0x7f80;
  const aligned = (bytes.byteOffset + t.offset) % 2 === 0;
  const n = t.byteLength / 2;
  if (aligned) {
    const u16 = new Uint16Array(bytes.buffer, bytes.byteOffset + t.offset, n);
    for (let i = 0; i < n; i++) if (((u16[i] as number) & exponent) === exponent) return i;
    return -1;
  }
  for (let i = 0; i < n; i++) if ((view.getUint16(2 * i, true) & exponent) === exponent) return i;
  return -1;
}

/** Read a tensor as fp32 (a copy; used by tests and small tensors, not on the weight-loading path). */
export function readAsFloat32(st: SafetensorsFile, name: string): Float32Array {
  const t = st.tensors.get(name);
  if (!t) throw new ModelLoadError(`${st.file}: no tensor named ${name}`);
  if (t.dtype !== 'F32' && t.dtype !== 'F16' && t.dtype !== 'BF16') {
    throw new ModelLoadError(`${st.file}: tensor ${name} is ${t.dtype}, not a float type`);
  }
  return toFloat32(st.bytes.subarray(t.offset, t.offset + t.byteLength), t.dtype);
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
