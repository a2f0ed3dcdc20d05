/**
 * Logits to probabilities, the same way for draft and target (temperature, top-k, top-p, all in fp32), plus a
 * seeded RNG so a run is reproducible: same seed, same output.
 */

export interface SamplingParams {
  /** 0 means greedy (argmax); otherwise logits are divided by it. */
  temperature: number;
  /** Keep the k most likely tokens (0 = all). */
  topK: number;
  /** Keep the smallest set of most likely tokens whose mass reaches p (1 = all). */
  topP: number;
  seed: number;
}

export const GREEDY: SamplingParams = { temperature: 0, topK: 0, topP: 1, seed: 0 };

export function isGreedy(params: SamplingParams): boolean {
  return params.temperature <= 0;
}

export function checkSampling(p: SamplingParams): void {
  if (!(p.temperature >= 0) || !Number.isFinite(p.temperature))
    throw new RangeError(`temperature ${p.temperature} must be >= 0`);
  if (!Number.isInteger(p.topK) || p.topK < 0) throw new RangeError(`top-k ${p.topK} must be a non-negative integer`);
  if (!(p.topP > 0 && p.topP <= 1)) throw new RangeError(`top-p ${p.topP} must be in (0, 1]`);
  if (!Number.isInteger(p.seed)) throw new RangeError(`seed ${p.seed} must be an integer`);
}

export function argmax(row: ArrayLike<number>): number {
  let best = 0;
  let bestValue = row[0] as number;
  for (let i = 1; i < row.length; i++) {
    const v = row[i] as number;
    if (v > bestValue) {
      bestValue = v;
      best = i;
    }
  }
  return best;
}

/** Softmax of logits / temperature, then top-k and top-p filtering, renormalised. Greedy gives a one-hot. */
export function toProbs(logits: ArrayLike<number>, params: SamplingParams): Float32Array {
  const n = logits.length;
  const out = new Float32Array(n);
  if (isGreedy(params)) {
    out[argmax(logits)] = 1;
    return out;
  }
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < n; i++) max = Math.max(max, logits[i] as number);
  let sum = 0;
  for (let i = 0; i < n; i++) {
    const e = Math.exp(((logits[i] as number) - max) / params.temperature);
    out[i] = e;
    sum += e;
  }
  for (let i = 0; i < n; i++) out[i] = (out[i] as number) / sum;
  if ((params.topK > 0 && params.topK < n) || params.topP < 1) filterTopKTopP(out, params.topK, params.topP);
  return out;
}

/** In place: zero everything outside top-k and outside the top-p nucleus, then renormalise. */
function filterTopKTopP(probs: Float32Array, topK: number, topP: number): void {
  const order = Array.from(probs.keys()).sort((a, b) => (probs[b] as number) - (probs[a] as number));
  const limit = topK > 0 ? Math.min(topK, order.length) : order.length;
  let kept = 0;
  let mass = 0;
  // The nucleus: the smallest prefix whose mass reaches topP (at least one token).
  while (kept < limit && (kept === 0 || mass < topP)) {
    mass += probs[order[kept] as number] as number;
    kept++;
  }
  for (let i = kept; i < order.length; i++) probs[order[i] as number] = 0;
  for (let i = 0; i < kept; i++) {
    const t = order[i] as number;
    probs[t] = (probs[t] as number) / mass;
  }
}

/** A small, fast, seedable PRNG (sfc32) returning floats in [0, 1). */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    this.a = 0x9e3779b9;
    this.b = 0x243f6a88;
    this.c = 0xb7e15162;
    this.d = seed >>> 0;
    for (let i = 0; i < 15; i++) this.next();
  }

  next(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return (t >>> 0) / 4294967296;
  }

  /** Standard Gumbel noise. */
  gumbel(): number {
    return -Math.log(-Math.log(this.next() || Number.MIN_VALUE));
  }
}

/** Draw one index from a probability vector. */
export function sampleFrom(probs: ArrayLike<number>, rng: Rng): number {
  let total = 0;
  for (let i = 0; i < probs.length; i++) total += probs[i] as number;
  let u = rng.next() * total;
  let last = 0;
  for (let i = 0; i < probs.length; i++) {
    const p = probs[i] as number;
    if (p <= 0) continue;
    last = i;
    u -= p;
    if (u < 0) return i;
  }
  return last;
}

/**
 * k distinct indices drawn without replacement from probs, in draw order, with their perturbed log-scores (the
 * Gumbel-top-k trick: the k largest log p + Gumbel noise). Zero-probability tokens are never drawn, so fewer than k
 * may come back.
 */
export function gumbelTopK(probs: ArrayLike<number>, k: number, rng: Rng): { token: number; score: number }[] {
  const keyed: { token: number; score: number }[] = [];
  for (let token = 0; token < probs.length; token++) {
    const p = probs[token] as number;
    if (p > 0) keyed.push({ token, score: Math.log(p) + rng.gumbel() });
  }
  keyed.sort((a, b) => b.score - a.score);
  return keyed.slice(0, k);
}

/** k distinct indices drawn without replacement from probs, in draw order. */
export function sampleWithoutReplacement(probs: ArrayLike<number>, k: number, rng: Rng): number[] {
  return gumbelTopK(probs, k, rng).map((d) => d.token);
}

/** Indices of the k largest values, largest first, by partial selection (ties: lower index first). */
export function topK(values: ArrayLike<number>, k: number): number[] {
  const idx: number[] = [];
  const val: number[] = [];
  for (let i = 0; i < values.length; i++) {
    const x = values[i] as number;
    if (idx.length === k && x <= (val[k - 1] as number)) continue;
    let at = idx.length === k ? k - 1 : idx.length;
    while (at > 0 && (val[at - 1] as number) < x) {
      if (at < k) {
        idx[at] = idx[at - 1] as number;
        val[at] = val[at - 1] as number;
      }
      at--;
    }
    idx[at] = i;
    val[at] = x;
  }
  return idx;
}
