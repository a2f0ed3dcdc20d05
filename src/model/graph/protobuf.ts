/**
 * A minimal protocol-buffers writer: just enough wire format (varint, 32-bit float, length-delimited)
 * to serialise ONNX messages without a protobuf dependency.
 */
export class ProtoWriter {
  private chunks: Uint8Array[] = [];
  private scratch = new Uint8Array(16);

  /** Field tag: (field number << 3) | wire type. */
  private tag(field: number, wireType: 0 | 1 | 2 | 5): void {
    this.rawVarint(BigInt((field << 3) | wireType));
  }

  private rawVarint(value: bigint): void {
    // Negative int64 values are written as their 64-bit two's complement (10 bytes), as protobuf requires.
    let v = value < 0n ? BigInt.asUintN(64, value) : value;
    let n = 0;
    while (v >= 0x80n) {
      this.scratch[n++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.scratch[n++] = Number(v);
    this.chunks.push(this.scratch.slice(0, n));
  }

  /** int32 / int64 / enum / bool field (skipped when `value` is undefined). */
  int(field: number, value: number | bigint | undefined): this {
    if (value === undefined) return this;
    if (typeof value === 'number' && !Number.isSafeInteger(value)) {
      throw new RangeError(`protobuf field ${field}: ${value} is not a safe integer`);
    }
    this.tag(field, 0);
    this.rawVarint(BigInt(value));
    return this;
  }

  /** A packed repeated int64 field. */
  packedInts(field: number, values: readonly (number | bigint)[]): this {
    if (values.length === 0) return this;
    const inner = new ProtoWriter();
    for (const v of values) inner.rawVarint(BigInt(v));
    return this.bytes(field, inner.finish());
  }

  float(field: number, value: number | undefined): this {
    if (value === undefined) return this;
    this.tag(field, 5);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, value, true);
    this.chunks.push(b);
    return this;
  }

  packedFloats(field: number, values: readonly number[]): this {
    if (values.length === 0) return this;
    const b = new Uint8Array(values.length * 4);
    const view = new DataView(b.buffer);
    values.forEach((v, i) => {
      view.setFloat32(i * 4, v, true);
    });
    return this.bytes(field, b);
  }

  string(field: number, value: string | undefined): this {
    if (value === undefined) return this;
    return this.bytes(field, new TextEncoder().encode(value));
  }

  bytes(field: number, value: Uint8Array): this {
    this.tag(field, 2);
    this.rawVarint(BigInt(value.byteLength));
    this.chunks.push(value);
    return this;
  }

  /** A nested message, written by `write` into a fresh writer. */
  message(field: number, write: (w: ProtoWriter) => void): this {
    const inner = new ProtoWriter();
    write(inner);
    return this.bytes(field, inner.finish());
  }

  finish(): Uint8Array {
    let size = 0;
    for (const c of this.chunks) size += c.byteLength;
    const out = new Uint8Array(size);
    let offset = 0;
    for (const c of this.chunks) {
      out.set(c, offset);
      offset += c.byteLength;
    }
    return out;
  }
}
