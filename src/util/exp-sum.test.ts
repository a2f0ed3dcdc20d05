import { describe, expect, it } from 'vitest';
import { expSumBelow } from './exp-sum';

function exact(row: Float32Array, max: number): number {
  let sum = 0;
  for (const x of row) sum += Math.exp(x - max);
  return sum;
}

describe('expSumBelow', () => {
  it('matches the sum of Math.exp within 1e-5 over logits rows of every spread', () => {
    let seed = 7;
    const rand = () => {
      seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
      return seed / 2 ** 32;
    };
    for (const spread of [0.01, 1, 8, 30, 300]) {
      for (let r = 0; r < 20; r++) {
        const row = Float32Array.from({ length: 4096 }, () => (rand() - 0.5) * spread);
        const max = Math.max(...row);
        const want = exact(row, max);
        expect(Math.abs(expSumBelow(row, max) - want) / want).toBeLessThan(1e-5);
      }
    }
  });

  it('counts the maximum as 1, entries of -Infinity and far below as nothing', () => {
    expect(expSumBelow([3, Number.NEGATIVE_INFINITY, 3 - 5000], 3)).toBe(1);
    expect(expSumBelow([0, -Math.LN2, -2 * Math.LN2], 0)).toBeCloseTo(1.75, 12);
  });
});
