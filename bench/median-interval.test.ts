import { describe, expect, it } from 'vitest';
import { medianInterval } from './median-interval';

describe('medianInterval', () => {
  it('takes the order statistics the binomial tail allows', () => {
    const xs = Array.from({ length: 10 }, (_, i) => 10 - i); // 10..1, unsorted on purpose
    // n = 10: P(B <= 1) = 11/1024 = 0.0107 <= 0.05, P(B <= 2) = 56/1024 = 0.0547 > 0.05: k = 2, [x(2), x(9)].
    expect(medianInterval(xs, 0.9)).toEqual({ lo: 2, hi: 9 });
    // At 0.95: P(B <= 1) = 0.0107 <= 0.025, P(B <= 2) > 0.025: the same k.
    expect(medianInterval(xs, 0.95)).toEqual({ lo: 2, hi: 9 });
    // At 0.99: P(B <= 0) = 0.00098 <= 0.005, P(B <= 1) = 0.0107 > 0.005: k = 1, the extremes.
    expect(medianInterval(xs, 0.99)).toEqual({ lo: 1, hi: 10 });
  });

  it('is null where no pair of order statistics reaches the level', () => {
    expect(medianInterval([1, 2, 3, 4], 0.9)).toBeNull();
    expect(medianInterval([], 0.9)).toBeNull();
    expect(medianInterval([1, 2, 3, 4, 5], 0.9)).toEqual({ lo: 1, hi: 5 });
  });

  it('covers the true median at about the level asked, never less (simulated)', () => {
    let seed = 7;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    for (const n of [15, 50]) {
      let covered = 0;
      const trials = 2000;
      for (let t = 0; t < trials; t++) {
        // Exponential samples: a skewed distribution whose median is ln 2.
        const xs = Array.from({ length: n }, () => -Math.log(1 - rand()));
        const ci = medianInterval(xs, 0.9);
        if (ci && ci.lo <= Math.LN2 && Math.LN2 <= ci.hi) covered++;
      }
      expect(covered / trials).toBeGreaterThan(0.88);
      expect(covered / trials).toBeLessThan(0.97);
    }
  });
});
