/**
 * A small Gaussian process with an RBF kernel and the UCB acquisition, for SWIFT's interval Bayesian optimisation
 * over skip sets (the reference code uses `bayes_opt`: GP with alpha 1e-2, UCB with kappa 2.5, continuous points in
 * [0, 1]^d turned into a set by taking the top-N coordinates). Written here rather than taken from npm: it is ~80
 * lines, the maintained npm GP packages pull in general linear-algebra libraries many times this size, and the
 * problem is tiny (d <= a few hundred switches, at most a few hundred observations).
 */

export interface GpOptions {
  /** Observation noise added to the kernel's diagonal (bayes_opt's alpha). */
  alpha: number;
  /** RBF length scale, in units of the input space ([0, 1]^d). */
  lengthScale: number;
  /** UCB exploration weight. */
  kappa: number;
}

export const GP_DEFAULTS: GpOptions = { alpha: 1e-2, lengthScale: 1, kappa: 2.5 };

const sqDist = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) {
    const d = (a[i] as number) - (b[i] as number);
    s += d * d;
  }
  return s;
};

/** In-place Cholesky of a symmetric positive-definite n x n matrix (row-major): returns L, lower-triangular. */
function cholesky(m: Float64Array, n: number): Float64Array {
  const l = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      let s = m[i * n + j] as number;
      for (let k = 0; k < j; k++) s -= (l[i * n + k] as number) * (l[j * n + k] as number);
      l[i * n + j] = i === j ? Math.sqrt(Math.max(s, 1e-12)) : s / (l[j * n + j] as number);
    }
  }
  return l;
}

/** Solve L y = b (forward) for lower-triangular L. */
function forward(l: Float64Array, n: number, b: ArrayLike<number>): Float64Array {
  const y = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let s = b[i] as number;
    for (let k = 0; k < i; k++) s -= (l[i * n + k] as number) * (y[k] as number);
    y[i] = s / (l[i * n + i] as number);
  }
  return y;
}

/** Solve L^T x = y (backward). */
function backward(l: Float64Array, n: number, y: ArrayLike<number>): Float64Array {
  const x = new Float64Array(n);
  for (let i = n - 1; i >= 0; i--) {
    let s = y[i] as number;
    for (let k = i + 1; k < n; k++) s -= (l[k * n + i] as number) * (x[k] as number);
    x[i] = s / (l[i * n + i] as number);
  }
  return x;
}

export class GaussianProcess {
  private l: Float64Array = new Float64Array(0);
  private weights: Float64Array = new Float64Array(0);
  private mean = 0;

  constructor(
    private readonly xs: readonly (readonly number[])[],
    ys: readonly number[],
    private readonly options: GpOptions = GP_DEFAULTS,
  ) {
    const n = xs.length;
    this.mean = n > 0 ? ys.reduce((a, b) => a + b, 0) / n : 0;
    const k = new Float64Array(n * n);
    for (let i = 0; i < n; i++)
      for (let j = 0; j < n; j++)
        k[i * n + j] = this.kernel(xs[i] as number[], xs[j] as number[]) + (i === j ? options.alpha : 0);
    this.l = cholesky(k, n);
    this.weights = backward(
      this.l,
      n,
      forward(
        this.l,
        n,
        ys.map((y) => y - this.mean),
      ),
    );
  }

  private kernel(a: ArrayLike<number>, b: ArrayLike<number>): number {
    return Math.exp(-sqDist(a, b) / (2 * this.options.lengthScale ** 2));
  }

  /** Posterior mean and standard deviation at x. */
  predict(x: ArrayLike<number>): { mean: number; std: number } {
    const n = this.xs.length;
    const kx = new Float64Array(n);
    for (let i = 0; i < n; i++) kx[i] = this.kernel(this.xs[i] as number[], x);
    let mean = this.mean;
    for (let i = 0; i < n; i++) mean += (kx[i] as number) * (this.weights[i] as number);
    const v = forward(this.l, n, kx);
    let variance = 1;
    for (let i = 0; i < n; i++) variance -= (v[i] as number) ** 2;
    return { mean, std: Math.sqrt(Math.max(variance, 0)) };
  }

  /** Upper confidence bound: mean + kappa * std. */
  ucb(x: ArrayLike<number>): number {
    const { mean, std } = this.predict(x);
    return mean + this.options.kappa * std;
  }
}
