import { describe, expect, it } from 'vitest';
import { MASKED } from '../engine/lm';
import { f16ToF32 } from './convert';
import { CHUNK, HostCache } from './host-cache';

const KVH = 2;
const HD = 3;

/** A call's rows as the graph returns them, each value naming its layer, slot, head and dim (slot = first + j). */
function rows(layer: number, first: number, q: number): { k: Float32Array; v: Float32Array } {
  const k = new Float32Array(KVH * HD * q); // [kvh, 1, hd, q]
  const v = new Float32Array(KVH * q * HD); // [kvh, 1, q, hd]
  for (let h = 0; h < KVH; h++)
    for (let j = 0; j < q; j++)
      for (let d = 0; d < HD; d++) {
        const tag = 1000 * layer + 10 * (first + j) + (h * HD + d) / 10;
        k[(h * HD + d) * q + j] = tag;
        v[(h * q + j) * HD + d] = -tag;
      }
  return { k, v };
}

/** What read() should give for these slots, in order: [kvh, slots, hd] each. */
function expected(layer: number, slots: number[]): { key: number[]; value: number[] } {
  const key: number[] = [];
  for (let h = 0; h < KVH; h++)
    for (const s of slots) for (let d = 0; d < HD; d++) key.push(1000 * layer + 10 * s + (h * HD + d) / 10);
  return { key, value: key.map((x) => -x) };
}

/** Every layer's rows as the graph's one output holds them: layer by layer, keys then values, flattened. */
function newKv(layers: number, first: number, q: number): Float32Array {
  const n = KVH * HD * q;
  const all = new Float32Array(2 * n * layers);
  for (let i = 0; i < layers; i++) {
    const { k, v } = rows(i, first, q);
    all.set(k, 2 * i * n);
    all.set(v, (2 * i + 1) * n);
  }
  return all;
}

function call(cache: HostCache, q: number, layers = 2): void {
  cache.ensure(cache.length + q);
  cache.appendAll(newKv(layers, cache.length, q), q);
}

const values = (a: Float32Array) => Array.from(a, (x) => Math.fround(x));
const f32 = (xs: number[]) => xs.map((x) => Math.fround(x));

describe('HostCache (the wasm KV cache kept in JavaScript)', () => {
  it('appends rows in its layouts and grows in CHUNK steps, keeping the rows in use', () => {
    const cache = new HostCache(2, KVH, HD, 'float32');
    call(cache, 5);
    expect(cache.capacity).toBe(CHUNK);
    for (let n = 0; n < 9; n++) call(cache, 4); // 41 slots: grown once, past the first chunk
    expect(cache.length).toBe(41);
    expect(cache.capacity).toBe(2 * CHUNK);
    const slots = Array.from({ length: 41 }, (_, s) => s);
    for (const layer of [0, 1]) {
      const { key, value } = cache.read(layer);
      expect(values(key)).toEqual(f32(expected(layer, slots).key));
      expect(values(value)).toEqual(f32(expected(layer, slots).value));
    }
    // The past goes in as keys [kvh, 1, hd, cap] and values [kvh, 1, cap, hd], the whole capacity.
    const made: { type: string; dims: readonly number[]; length: number }[] = [];
    class Tensor {
      constructor(type: string, data: Float32Array | Uint16Array, dims: readonly number[]) {
        made.push({ type, dims, length: data.length });
      }
    }
    cache.feeds({ Tensor } as never, 1);
    expect(made).toEqual([
      { type: 'float32', dims: [KVH, 1, HD, 64], length: KVH * HD * 64 },
      { type: 'float32', dims: [KVH, 1, 64, HD], length: KVH * HD * 64 },
    ]);
  });

  it('compacts to the kept slots: a tree path after the committed prefix, and any order', () => {
    const cache = new HostCache(2, KVH, HD, 'float32');
    call(cache, 30);
    call(cache, 9); // a tree of 9 nodes after 30 committed slots (crosses the first chunk)
    const accepted = [...Array.from({ length: 30 }, (_, s) => s), 31, 34, 38];
    cache.compact(accepted);
    expect(cache.length).toBe(33);
    for (const layer of [0, 1]) {
      const { key, value } = cache.read(layer);
      expect(values(key)).toEqual(f32(expected(layer, accepted).key));
      expect(values(value)).toEqual(f32(expected(layer, accepted).value));
    }
    // The next call's rows land after the kept ones.
    call(cache, 2);
    const after = [...accepted, 33, 34];
    expect(values(cache.read(1).key)).toEqual(f32(expected(1, after).key));
    // Not increasing (no caller does this today, but keep() allows it): moved through a copy.
    const shuffled = [4, 0, 3, 3, 1];
    cache.compact(shuffled);
    const slots = shuffled.map((i) => after[i] as number);
    expect(values(cache.read(0).key)).toEqual(f32(expected(0, slots).key));
    expect(values(cache.read(0).value)).toEqual(f32(expected(0, slots).value));
  });

  it('comes back down to one spare CHUNK after a wide call whose slots are mostly dropped', () => {
    const cache = new HostCache(2, KVH, HD, 'float32');
    call(cache, 32);
    call(cache, 64); // a 64-wide call on 32 slots: capacity 96
    expect(cache.capacity).toBe(96);
    const kept = [...Array.from({ length: 30 }, (_, s) => s), 40, 70, 95];
    cache.compact(kept); // 33 in use: 64 rounded, plus one spare chunk
    expect(cache.capacity).toBe(2 * CHUNK + CHUNK);
    call(cache, 1);
    const slots = [...kept, 33];
    for (const layer of [0, 1]) {
      expect(values(cache.read(layer).key)).toEqual(f32(expected(layer, slots).key));
      expect(values(cache.read(layer).value)).toEqual(f32(expected(layer, slots).value));
    }
    cache.compact(Array.from({ length: 20 }, (_, s) => s)); // 20 in use: 32 rounded, plus one spare chunk
    expect(cache.capacity).toBe(2 * CHUNK);
  });

  it('lays the bias out over the fed slots: the ones in use, the spare ones masked, then the call', () => {
    const cache = new HostCache(1, KVH, HD, 'float32');
    call(cache, 3, 1);
    cache.ensure(CHUNK + 1); // capacity 64, 3 in use
    const q = 2;
    const bias = Float32Array.from({ length: q * (3 + q) }, (_, i) => i + 1); // [2, 5], no zeros
    const out = cache.bias(bias, q);
    const cap = cache.capacity;
    expect(out.length).toBe(q * (cap + q));
    for (let r = 0; r < q; r++) {
      const row = Array.from(out.subarray(r * (cap + q), (r + 1) * (cap + q)));
      expect(row.slice(0, 3)).toEqual(Array.from(bias.subarray(r * 5, r * 5 + 3)));
      expect(new Set(row.slice(3, cap))).toEqual(new Set([MASKED]));
      expect(row.slice(cap)).toEqual(Array.from(bias.subarray(r * 5 + 3, r * 5 + 5)));
    }
  });

  it('keeps fp16 rows as bit patterns, also when they come as a Float16Array (Chromium)', () => {
    const cache = new HostCache(1, KVH, HD, 'float16');
    const q = 2;
    cache.ensure(q);
    const bits = (sign: number) => Uint16Array.from({ length: KVH * HD * q }, (_, i) => 0x3c00 + sign + i);
    // What a Float16Array looks like to the cache: the same bytes, its elements read as numbers (1.0, 1.0009765625, ...).
    const asHalfFloats = (u: Uint16Array) => {
      const view: Record<string, unknown> = { buffer: u.buffer, byteOffset: u.byteOffset, length: u.length };
      u.forEach((h, i) => {
        view[i] = f16ToF32(h);
      });
      return view as unknown as Float32Array;
    };
    const both = new Uint16Array(2 * KVH * HD * q);
    both.set(bits(0));
    both.set(bits(0x8000), KVH * HD * q);
    cache.appendAll(asHalfFloats(both), q);
    const { key, value } = cache.read(0);
    expect(key.every((x) => x >= 1 && x < 2)).toBe(true);
    expect(value.every((x) => x <= -1 && x > -2)).toBe(true);
    expect(Array.from(key).sort()).toEqual(Array.from(bits(0), f16ToF32).sort());
  });

  it('refuses rows past its capacity or of the wrong size, and clear() drops the capacity too', () => {
    const cache = new HostCache(1, KVH, HD, 'float16');
    cache.ensure(4);
    const { k, v } = rows(0, 0, 40);
    expect(() => cache.append(0, Uint16Array.from(k), Uint16Array.from(v), 40)).toThrow(/exceed the capacity 32/);
    expect(() => cache.append(0, new Uint16Array(5), new Uint16Array(6), 1)).toThrow(/returned 5 \+ 6 values/);
    expect(() => cache.appendAll(new Uint16Array(2 * KVH * HD + 1), 1)).toThrow(
      /returned 13 new values, expected 12 for 1 rows/,
    );
    expect(cache.length).toBe(0);
    cache.clear();
    expect([cache.length, cache.capacity]).toEqual([0, 0]);
  });
});
