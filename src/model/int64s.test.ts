import { describe, expect, it } from 'vitest';
import { int64s } from './gpu-feeds';

describe('int64s', () => {
  it('writes every integer as its int64, 32-bit and wider, negative and not', () => {
    const values = [0, 1, -1, 7, 4095, 2 ** 31 - 1, -(2 ** 31), 2 ** 31, 2 ** 40 + 3, -(2 ** 40), 2 ** 53 - 1];
    expect([...int64s(values)]).toEqual(values.map((v) => BigInt(v)));
    expect([...int64s(new Int32Array([5, -6]))]).toEqual([5n, -6n]);
    expect(int64s([]).length).toBe(0);
  });

  it('refuses what is not an integer, as BigInt does', () => {
    expect(() => int64s([1.5])).toThrow(RangeError);
    expect(() => int64s([Number.NaN])).toThrow(RangeError);
  });
});
