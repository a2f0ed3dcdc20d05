/** Goodness-of-fit helpers for the losslessness tests. */

/** Standard normal upper tail. */
function normalTail(z: number): number {
  // Abramowitz-Stegun 7.1.26 on erfc.
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.3275911 * x);
  const erfc =
    t *
    (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))) *
    Math.exp(-x * x);
  return z >= 0 ? erfc / 2 : 1 - erfc / 2;
}

/** Chi-square test of observed counts against expected probabilities; cells with expectation < 5 are pooled. */
export function chiSquare(observed: number[], probs: number[]): { statistic: number; df: number; pValue: number } {
  const n = observed.reduce((a, b) => a + b, 0);
  let stat = 0;
  let cells = 0;
  let poolO = 0;
  let poolE = 0;
  observed.forEach((o, i) => {
    const e = n * (probs[i] as number);
    if (e < 5) {
      poolO += o;
      poolE += e;
      return;
    }
    stat += ((o - e) * (o - e)) / e;
    cells++;
  });
  if (poolE > 0) {
    stat += ((poolO - poolE) * (poolO - poolE)) / Math.max(poolE, 1e-9);
    cells++;
  }
  const df = Math.max(1, cells - 1);
  // Wilson-Hilferty: (X/df)^(1/3) is about normal.
  const z = ((stat / df) ** (1 / 3) - (1 - 2 / (9 * df))) / Math.sqrt(2 / (9 * df));
  return { statistic: stat, df, pValue: normalTail(z) };
}

export function totalVariation(observed: number[], probs: number[]): number {
  const n = observed.reduce((a, b) => a + b, 0);
  return observed.reduce((acc, o, i) => acc + Math.abs(o / n - (probs[i] as number)), 0) / 2;
}
