/**
 * A model's KV cache kept in JavaScript, for graphs built with hostCache (the wasm EP): onnxruntime-web's wasm API
 * copies every input into its heap and every output out of it into a fresh array, so a cache that passed through
 * the graph crossed that boundary whole twice a call, and the graph gathered (compaction), concatenated and
 * transposed it on top. Here only this call's rows come out (appended in place), compaction moves the few rows it
 * changes, and the past goes in already laid out for the attention's MatMuls.
 *
 * Per layer, keys transposed [kvh, hd, cap] and values [kvh, cap, hd], where cap (the capacity, a multiple of CHUNK)
 * is at least the cache's length; a call feeds all cap slots and the bias masks those past the length (stale rows
 * there are finite values of earlier calls, zeros at first, so a masked weight of exactly 0 adds nothing).
 */
import type { Tensor } from 'onnxruntime-common';
import { MASKED } from '../engine/lm';
import { f16ToF32 } from './convert';

/** Capacity grows in steps of this many slots (a regrow copies the cache once). */
export const CHUNK = 32;

type Floats = Float32Array | Uint16Array;

interface TensorMaker {
  Tensor: new (type: 'float32' | 'float16', data: Floats, dims: readonly number[]) => Tensor;
}

export class HostCache {
  private keys: Floats[] = [];
  private values: Floats[] = [];
  private cap = 0;
  /** Slots in use. */
  length = 0;

  constructor(
    private readonly layers: number,
    private readonly kvh: number,
    private readonly hd: number,
    private readonly type: 'float32' | 'float16',
  ) {
    this.clear();
  }

  get capacity(): number {
    return this.cap;
  }

  private alloc(n: number): Floats {
    return this.type === 'float16' ? new Uint16Array(n) : new Float32Array(n);
  }

  /** Drop everything (a new prompt): the capacity too, so a short prompt does not attend over a long one's slots. */
  clear(): void {
    this.cap = 0;
    this.length = 0;
    this.keys = Array.from({ length: this.layers }, () => this.alloc(0));
    this.values = Array.from({ length: this.layers }, () => this.alloc(0));
  }

  /** Room for at least n slots (the rows in use are carried over). */
  ensure(n: number): void {
    if (n > this.cap) this.resize(Math.ceil(n / CHUNK) * CHUNK);
  }

  private resize(cap: number): void {
    const { kvh, hd, length } = this;
    const rows = kvh * hd;
    for (let i = 0; i < this.layers; i++) {
      const oldK = this.keys[i] as Floats;
      const oldV = this.values[i] as Floats;
      const k = this.alloc(rows * cap);
      const v = this.alloc(kvh * cap * hd);
      for (let r = 0; r < rows; r++) k.set(oldK.subarray(r * this.cap, r * this.cap + length), r * cap);
      for (let h = 0; h < kvh; h++) v.set(oldV.subarray(h * this.cap * hd, (h * this.cap + length) * hd), h * cap * hd);
      this.keys[i] = k;
      this.values[i] = v;
    }
    this.cap = cap;
  }

  /**
   * Keep only these slots, in this order (indices below the length; the runner has checked them). Every call feeds
   * all the capacity, so after a wide call most of whose slots are dropped (a big tree, a wide calibration call) the
   * capacity comes back down to one spare CHUNK: a 64-wide call left the next one-token call attending over twice
   * the slots, and a calibration that interleaves widths measured T(1) 1.3x a one-token call's real cost.
   */
  compact(keep: readonly number[]): void {
    let from = 0;
    while (from < keep.length && keep[from] === from) from++;
    if (from < keep.length) {
      const { kvh, hd, cap } = this;
      // Increasing indices move rows towards the front only, so they can move in place, front to back.
      let increasing = true;
      for (let j = from + 1; j < keep.length; j++)
        if ((keep[j] as number) <= (keep[j - 1] as number)) increasing = false;
      const order = increasing ? keep : null;
      for (let i = 0; i < this.layers; i++) {
        const k = this.keys[i] as Floats;
        const v = this.values[i] as Floats;
        const srcK = order ? k : k.slice();
        const srcV = order ? v : v.slice();
        for (let r = 0; r < kvh * hd; r++) {
          const base = r * cap;
          for (let j = from; j < keep.length; j++) k[base + j] = srcK[base + (keep[j] as number)] as number;
        }
        for (let h = 0; h < kvh; h++) {
          const base = h * cap;
          for (let j = from; j < keep.length; j++) {
            const src = (base + (keep[j] as number)) * hd;
            if (order) v.copyWithin((base + j) * hd, src, src + hd);
            else v.set(srcV.subarray(src, src + hd), (base + j) * hd);
          }
        }
      }
    }
    this.length = keep.length;
    const spare = Math.ceil(this.length / CHUNK) * CHUNK + CHUNK;
    if (this.cap > spare) this.resize(spare);
  }

  /**
   * The call's bias [q, length + q] laid out over the fed slots, [q, cap + q]: the slots in use, the spare ones
   * masked, then the call's own tokens.
   */
  bias(bias: Float32Array, q: number): Float32Array {
    const { length, cap } = this;
    const total = length + q;
    const out = new Float32Array(q * (cap + q));
    for (let r = 0; r < q; r++) {
      const row = r * (cap + q);
      out.set(bias.subarray(r * total, r * total + length), row);
      out.fill(MASKED, row + length, row + cap);
      out.set(bias.subarray(r * total + length, (r + 1) * total), row + cap);
    }
    return out;
  }

  /** The past inputs of layer i: keys [kvh, 1, hd, cap] and values [kvh, 1, cap, hd] (no copy here). */
  feeds(ort: TensorMaker, i: number): [Tensor, Tensor] {
    const { kvh, hd, cap } = this;
    return [
      new ort.Tensor(this.type, this.keys[i] as Floats, [kvh, 1, hd, cap]),
      new ort.Tensor(this.type, this.values[i] as Floats, [kvh, 1, cap, hd]),
    ];
  }

  /**
   * A tensor's data as this cache's element type: fp16 bit patterns stay bit patterns (where onnxruntime hands out a
   * Float16Array, as in Chromium, its elements would otherwise be written as numbers).
   */
  private bits(x: ArrayBufferView & { length: number }): Floats {
    if (this.type === 'float32') return x as Float32Array;
    return x instanceof Uint16Array ? x : new Uint16Array(x.buffer, x.byteOffset, x.length);
  }

  /**
   * Write a call's rows of layer i after the slots in use: keys [kvh, 1, hd, q], values [kvh, 1, q, hd] (as the graph
   * returns them). Every layer first, then advance().
   */
  append(
    i: number,
    keys: ArrayBufferView & { length: number },
    values: ArrayBufferView & { length: number },
    q: number,
  ): void {
    const newK = this.bits(keys);
    const newV = this.bits(values);
    const { kvh, hd, cap, length } = this;
    if (length + q > cap) throw new Error(`host cache: ${length} + ${q} slots exceed the capacity ${cap}`);
    if (newK.length !== kvh * hd * q || newV.length !== kvh * q * hd)
      throw new Error(`host cache: layer ${i} returned ${newK.length} + ${newV.length} values for ${q} rows`);
    const k = this.keys[i] as Floats;
    const v = this.values[i] as Floats;
    for (let r = 0; r < kvh * hd; r++) {
      const to = r * cap + length;
      const from = r * q;
      for (let j = 0; j < q; j++) k[to + j] = newK[from + j] as number;
    }
    for (let h = 0; h < kvh; h++) v.set(newV.subarray(h * q * hd, (h + 1) * q * hd), (h * cap + length) * hd);
  }

  /**
   * Write a call's rows of every layer from the graph's one NEW_KV output (layer by layer, keys [kvh, 1, hd, q] then
   * values [kvh, 1, q, hd], flattened), then advance().
   */
  appendAll(rows: ArrayBufferView & { length: number }, q: number): void {
    const all = this.bits(rows);
    const n = this.kvh * this.hd * q;
    if (all.length !== 2 * n * this.layers)
      throw new Error(
        `host cache: the call returned ${all.length} new values, expected ${2 * n * this.layers} for ${q} rows`,
      );
    for (let i = 0; i < this.layers; i++)
      this.append(i, all.subarray(2 * i * n, (2 * i + 1) * n), all.subarray((2 * i + 1) * n, (2 * i + 2) * n), q);
    this.advance(q);
  }

  advance(q: number): void {
    this.length += q;
  }

  /** Layer i's slots in use as fp32 [kvh, length, hd] each (tests and debugging). */
  read(i: number): { key: Float32Array; value: Float32Array } {
    const { kvh, hd, cap, length } = this;
    const num = (x: number) => (this.type === 'float16' ? f16ToF32(x) : x);
    const k = this.keys[i] as Floats;
    const v = this.values[i] as Floats;
    const key = new Float32Array(kvh * length * hd);
    const value = new Float32Array(kvh * length * hd);
    for (let h = 0; h < kvh; h++)
      for (let s = 0; s < length; s++)
        for (let d = 0; d < hd; d++) {
          key[(h * length + s) * hd + d] = num(k[(h * hd + d) * cap + s] as number);
          value[(h * length + s) * hd + d] = num(v[(h * cap + s) * hd + d] as number);
        }
    return { key, value };
  }
}
