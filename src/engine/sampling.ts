/**
 * Logits to probabilities, the same way for draft and target (temperature, top-k, top-p, all in fp32), plus a
 * seeded RNG so a run is reproducible: same seed, same output.
 */

import { shown } from '../util/options';
import type { HeadsTop } from './lm';

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

/**
 * Anything but an object of settings is refused: a number (0.8, meant as a temperature) or true had no settings and
 * decoded greedily without a word, and an array or a string was refused as having a setting "0".
 */
function checkSamplingShape(sampling: unknown): void {
  if (typeof sampling !== 'object' || sampling === null || Array.isArray(sampling))
    throw new TypeError(
      `sampling must be an object { temperature, topK, topP, seed } or left out (greedy); got ${shown(sampling)}`,
    );
}

export function checkSampling(p: SamplingParams): void {
  checkSamplingShape(p);
  // A misspelt setting ({ temprature: 1 }) decoded greedily without a word.
  const unknown = Object.keys(p).find((k) => !(k in GREEDY));
  if (unknown !== undefined)
    throw new RangeError(`sampling has no setting "${unknown}" (its settings: ${Object.keys(GREEDY).join(', ')})`);
  for (const [name, v] of [
    ['temperature', p.temperature],
    ['top-k', p.topK],
    ['top-p', p.topP],
    ['seed', p.seed],
  ] as const)
    if (typeof v !== 'number') throw new TypeError(`${name} must be a number; got ${shown(v)}`);
  if (!(p.temperature >= 0) || !Number.isFinite(p.temperature))
    throw new RangeError(`temperature ${p.temperature} must be >= 0`);
  if (!Number.isInteger(p.topK) || p.topK < 0) throw new RangeError(`top-k ${p.topK} must be a non-negative integer`);
  if (!(p.topP > 0 && p.topP <= 1)) throw new RangeError(`top-p ${p.topP} must be in (0, 1]`);
  // Every seed accepted has its own stream (Rng takes all 53 bits); a larger number is not exact in a double.
  if (!Number.isSafeInteger(p.seed))
    throw new RangeError(`seed ${p.seed} must be an integer of at most 2^53 - 1 in size`);
}

/**
 * Sampling settings over greedy decoding's: a setting left out, or given as undefined, takes greedy's value
 * ({ temperature: 0.8 } alone samples from the whole vocabulary; { topK: undefined } is no top-k).
 */
export function withDefaults(sampling: Partial<SamplingParams> | undefined): SamplingParams {
  if (sampling !== undefined && sampling !== null) checkSamplingShape(sampling);
  const given = Object.entries(sampling ?? {}).filter(([, v]) => v !== undefined);
  return { ...GREEDY, ...Object.fromEntries(given) };
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

/**
 * The distribution to sample from, in Hugging Face's order: logits / temperature; top-k keeps the k largest logits
 * (ties: lower index first); softmax over what is kept; top-p keeps the smallest prefix of that, most likely first,
 * whose mass reaches p (at least one token); renormalised. Greedy gives a one-hot.
 *
 * With top-k set, nothing outside the k largest logits enters the result (not even the softmax normaliser), so a row
 * holding only its top k entries (the rest -Infinity: what a target returns when it sends back its top k) gives the
 * same probabilities, bit for bit, as the full row. Cost O(vocab) plus O(kept log kept): no sort of the vocabulary.
 */
export function toProbs(logits: ArrayLike<number>, params: SamplingParams): Float32Array {
  const n = logits.length;
  const out = new Float32Array(n);
  if (isGreedy(params)) {
    out[argmax(logits)] = 1;
    return out;
  }
  const t = params.temperature;
  const limited = params.topK > 0 && params.topK < n;
  // Candidates, most likely first (when a filter needs an order), and their unnormalised weights.
  let order: number[] | null = null;
  let sum = 0;
  if (limited) {
    order = topK(logits, params.topK);
    const max = logits[order[0] as number] as number;
    for (const i of order) {
      const e = Math.exp(((logits[i] as number) - max) / t);
      out[i] = e;
      sum += e;
    }
  } else {
    let max = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < n; i++) max = Math.max(max, logits[i] as number);
    for (let i = 0; i < n; i++) {
      const e = Math.exp(((logits[i] as number) - max) / t);
      out[i] = e;
      sum += e;
    }
  }
  if (params.topP < 1) {
    // The nucleus: grow a candidate list (the top m by weight) until its mass reaches p, then take its prefix.
    const target = params.topP * sum;
    let m = limited ? params.topK : Math.min(n, 64);
    for (;;) {
      if (!order || order.length < m) order = topK(out, m);
      let mass = 0;
      let kept = 0;
      while (kept < order.length && (kept === 0 || mass < target)) mass += out[order[kept++] as number] as number;
      if (mass >= target || order.length >= n || (limited && order.length >= params.topK)) {
        const keep = order.slice(0, kept);
        const next = new Float32Array(n);
        for (const i of keep) next[i] = (out[i] as number) / mass;
        return next;
      }
      m = Math.min(n, m * 4);
    }
  }
  for (let i = 0; i < n; i++) out[i] = (out[i] as number) / sum;
  return out;
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
    // The seed's high bits (a seed from 2^32 on, or below 0) go into another word: seeds 0 and 2^32, or -1 and
    // 2^32 - 1, shared one stream. Seeds from 0 to 2^32 - 1 keep the streams they always had.
    this.c ^= Math.floor(seed / 4294967296) | 0;
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
 * k distinct indices drawn without replacement from probs, in draw order, with their perturbed log-scores: the k
 * largest of log p + Gumbel noise (the Gumbel-top-k trick), sampled top-down instead of perturbing every token
 * (Kool et al. 2019, stochastic beam search): the largest perturbed score over a set of mass Z is Gumbel(log Z) and
 * belongs to a token drawn from p restricted to the set; the next is the same over the set without it, truncated
 * below the previous score. Same joint distribution of tokens and scores, in k passes over probs and 2k random
 * numbers instead of one Gumbel per token. Zero-probability tokens are never drawn, so fewer than k may come back.
 */
export function gumbelTopK(probs: ArrayLike<number>, k: number, rng: Rng): { token: number; score: number }[] {
  const out: { token: number; score: number }[] = [];
  const n = probs.length;
  let total = 0;
  for (let i = 0; i < n; i++) {
    const p = probs[i] as number;
    if (p > 0) total += p;
  }
  // Tokens drawn so far, ascending, ending in n (a pointer walks them during each pass instead of a lookup per
  // token; the sentinel keeps every read in bounds).
  const drawn: number[] = [n];
  let drawnMass = 0;
  let bound = Number.POSITIVE_INFINITY;
  while (out.length < k) {
    const mass = total - drawnMass;
    if (!(mass > total * 1e-12)) break;
    let u = rng.next() * mass;
    let token = -1;
    let next = 0;
    for (let i = 0; i < n; i++) {
      if (i === drawn[next]) {
        next++;
        continue;
      }
      const p = probs[i] as number;
      if (!(p > 0)) continue;
      token = i;
      u -= p;
      if (u < 0) break;
    }
    if (token < 0) break;
    const g = Math.log(mass) + rng.gumbel();
    // Truncated below the previous score: -log(exp(-bound) + exp(-g)), computed stably.
    const score =
      bound === Number.POSITIVE_INFINITY ? g : Math.min(bound, g) - Math.log1p(Math.exp(-Math.abs(bound - g)));
    out.push({ token, score });
    drawn.push(token);
    drawn.sort((x, y) => x - y);
    drawnMass += probs[token] as number;
    bound = score;
  }
  return out;
}

/** k distinct indices drawn without replacement from probs, in draw order. */
export function sampleWithoutReplacement(probs: ArrayLike<number>, k: number, rng: Rng): number[] {
  return gumbelTopK(probs, k, rng).map((d) => d.token);
}

/**
 * Indices of the k largest values, largest first (ties: lower index first). k <= 128: one pass keeping a sorted list;
 * larger k: the k-th largest value by quickselect on a copy, then the indices above it and enough of those equal to
 * it, sorted. O(n) either way on typical rows, never a sort of all n.
 */
export function topK(values: ArrayLike<number>, k: number): number[] {
  const n = values.length;
  k = Math.min(k, n);
  if (k <= 0) return [];
  if (k > 128) return topKBySelection(values, k);
  const idx: number[] = [];
  const val: number[] = [];
  for (let i = 0; i < n; i++) {
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

function topKBySelection(values: ArrayLike<number>, k: number): number[] {
  const n = values.length;
  const kth = kthLargest(Float64Array.from(values), k - 1);
  const idx: number[] = [];
  for (let i = 0; i < n; i++) if ((values[i] as number) > kth) idx.push(i);
  for (let i = 0; i < n && idx.length < k; i++) if (values[i] === kth) idx.push(i);
  return idx.sort((a, b) => (values[b] as number) - (values[a] as number) || a - b);
}

/** The value at rank r (0 = largest) of a, which it reorders (quickselect, median-of-three pivots). */
function kthLargest(a: Float64Array, r: number): number {
  let lo = 0;
  let hi = a.length - 1;
  while (hi > lo) {
    const mid = (lo + hi) >>> 1;
    const x = a[lo] as number;
    const y = a[mid] as number;
    const z = a[hi] as number;
    const pivot = Math.max(Math.min(x, y), Math.min(Math.max(x, y), z)); // the median of the three
    let i = lo;
    let j = hi;
    while (i <= j) {
      while ((a[i] as number) > pivot) i++;
      while ((a[j] as number) < pivot) j--;
      if (i <= j) {
        const t = a[i] as number;
        a[i] = a[j] as number;
        a[j] = t;
        i++;
        j--;
      }
    }
    if (r <= j) hi = j;
    else if (r >= i) lo = i;
    else return a[r] as number;
  }
  return a[lo] as number;
}

/** softmax then the k largest of every `vocab`-wide row of `logits` (ties: the lower id first), as heads' graphs do. */
export function softmaxTop(logits: Float32Array, vocab: number, wanted: number): HeadsTop {
  const k = Math.min(wanted, vocab);
  const rows = logits.length / vocab;
  const probs = new Float32Array(rows * k);
  const ids = new Int32Array(rows * k);
  for (let r = 0; r < rows; r++) {
    const row = logits.subarray(r * vocab, (r + 1) * vocab);
    // The k largest logits are the k most probable tokens; the largest is the softmax's shift.
    const top = topK(row, k);
    const max = row[top[0] as number] as number;
    let sum = 0;
    for (let i = 0; i < vocab; i++) sum += Math.exp((row[i] as number) - max);
    for (const [j, id] of top.entries()) {
      ids[r * k + j] = id;
      probs[r * k + j] = Math.exp((row[id] as number) - max) / sum;
    }
  }
  return { k, probs, ids };
}
