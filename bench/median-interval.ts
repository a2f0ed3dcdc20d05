/**
 * A distribution-free confidence interval for a median: the order statistics x(k) and x(n + 1 - k) of n samples,
 * with k the largest for which a Binomial(n, 1/2) count falls below k with probability at most (1 - level) / 2.
 * Exact for any continuous distribution, no resampling; null when n is too small for the level (n = 4 at 0.9 holds
 * the median with probability 0.875 at most).
 */
export function medianInterval(xs: readonly number[], level = 0.9): { lo: number; hi: number } | null {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  const tail = (1 - level) / 2;
  // P(B < k) = sum over j < k of C(n, j) / 2^n, built term by term in floating point (n stays in the hundreds).
  let below = 0;
  let term = 0.5 ** n;
  let k = 0;
  for (let j = 0; j < n; j++) {
    if (below + term > tail) break;
    below += term;
    term = (term * (n - j)) / (j + 1);
    k = j + 1;
  }
  if (k === 0) return null;
  return { lo: s[k - 1] as number, hi: s[n - k] as number };
}
