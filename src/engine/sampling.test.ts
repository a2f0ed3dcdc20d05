import { describe, expect, it } from 'vitest';
import {
  checkSampling,
  GREEDY,
  gumbelTopK,
  Rng,
  type SamplingParams,
  sampleFrom,
  sampleWithoutReplacement,
  softmaxTop,
  toProbs,
  topK,
  withDefaults,
} from './sampling';

const logits = Float32Array.from([2, 1, 0.5, -1, 3, 0]);

describe('sampling', () => {
  it('greedy is a one-hot argmax; temperature sharpens and flattens', () => {
    expect(Array.from(toProbs(logits, { temperature: 0, topK: 0, topP: 1, seed: 0 }))).toEqual([0, 0, 0, 0, 1, 0]);
    const hot = toProbs(logits, { temperature: 2, topK: 0, topP: 1, seed: 0 });
    const cold = toProbs(logits, { temperature: 0.5, topK: 0, topP: 1, seed: 0 });
    expect(cold[4]).toBeGreaterThan(hot[4] as number);
    expect(hot.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 6);
  });

  it('top-k keeps k tokens; top-p keeps the smallest nucleus reaching p', () => {
    const k2 = toProbs(logits, { temperature: 1, topK: 2, topP: 1, seed: 0 });
    expect(Array.from(k2).filter((p) => p > 0).length).toBe(2);
    expect((k2[4] as number) + (k2[0] as number)).toBeCloseTo(1, 6);
    const full = toProbs(logits, { temperature: 1, topK: 0, topP: 1, seed: 0 });
    const nucleus = toProbs(logits, { temperature: 1, topK: 0, topP: 0.85, seed: 0 });
    const kept = Array.from(nucleus.keys()).filter((i) => (nucleus[i] as number) > 0);
    expect(kept.sort()).toEqual([0, 1, 4]); // the top two hold less than 0.85 of the mass, the top three more
    expect((full[4] as number) + (full[0] as number)).toBeLessThan(0.85);
    expect((full[4] as number) + (full[0] as number) + (full[1] as number)).toBeGreaterThan(0.85);
  });

  it('the same seed gives the same draws; different seeds differ', () => {
    const p = toProbs(logits, { temperature: 1, topK: 0, topP: 1, seed: 0 });
    const draw = (seed: number) => {
      const rng = new Rng(seed);
      return Array.from({ length: 50 }, () => sampleFrom(p, rng));
    };
    expect(draw(7)).toEqual(draw(7));
    expect(draw(7)).not.toEqual(draw(8));
    // Every accepted seed has its own stream: the high bits count (0 and 2^32, -1 and 2^32 - 1 gave one stream).
    expect(draw(2 ** 32)).not.toEqual(draw(0));
    expect(draw(-1)).not.toEqual(draw(2 ** 32 - 1));
    expect(draw(2 ** 53 - 1)).not.toEqual(draw(2 ** 32 - 1));
    // Seeds below 2^32 keep the streams they had (a seed's text stays what it was).
    const r = new Rng(5);
    expect([r.next(), r.next(), r.next()]).toEqual([0.6452848957851529, 0.5324752188753337, 0.5458066661376506]);
  });

  it("settings are checked in one line naming them; left out or undefined, they take greedy decoding's", () => {
    const check = (p: Partial<SamplingParams>) => {
      try {
        checkSampling(withDefaults(p));
        return 'ok';
      } catch (e) {
        return (e as Error).message;
      }
    };
    expect(check({ temperature: 0.8, topK: undefined, topP: undefined, seed: undefined })).toBe('ok');
    expect(withDefaults({ temperature: 0.8, topK: undefined })).toEqual({ ...GREEDY, temperature: 0.8 });
    expect(withDefaults(undefined)).toEqual(GREEDY);
    // Not an object of settings (a bare temperature): refused, where 0.8 and true decoded greedily.
    expect(check(0.8 as never)).toBe(
      'sampling must be an object { temperature, topK, topP, seed } or left out (greedy); got 0.8',
    );
    expect(check(true as never)).toMatch(/^sampling must be an object .* got true$/);
    expect(check([1] as never)).toMatch(/^sampling must be an object .* got \[1\]$/);
    // A value JSON cannot write (a BigInt) is shown as String() shows it, not replaced by JSON's own error.
    expect(check({ temperature: 1n as unknown as number })).toBe('temperature must be a number; got 1');
    expect(check({ temperature: '0.8' as unknown as number })).toBe('temperature must be a number; got "0.8"');
    expect(check({ topK: null as unknown as number })).toBe('top-k must be a number; got null');
    expect(check({ seed: 2 ** 53 })).toBe('seed 9007199254740992 must be an integer of at most 2^53 - 1 in size');
    expect(check({ seed: -(2 ** 53 - 1) })).toBe('ok');
  });

  it('sampling matches the distribution; without-replacement draws are distinct and start like a plain draw', () => {
    const p = toProbs(logits, { temperature: 1, topK: 0, topP: 1, seed: 0 });
    const rng = new Rng(1);
    const n = 40000;
    const counts = new Array(6).fill(0);
    const firsts = new Array(6).fill(0);
    for (let i = 0; i < n; i++) {
      counts[sampleFrom(p, rng)]++;
      const w = sampleWithoutReplacement(p, 3, rng);
      expect(new Set(w).size).toBe(3);
      firsts[w[0] as number]++;
    }
    for (let i = 0; i < 6; i++) {
      expect(Math.abs(counts[i] / n - (p[i] as number))).toBeLessThan(0.01);
      expect(Math.abs(firsts[i] / n - (p[i] as number))).toBeLessThan(0.01);
    }
    expect(topK(p, 3)).toEqual([4, 0, 1]);
  });
});

describe('top-k and top-p in Hugging Face order', () => {
  it('top-p measures its mass after top-k has renormalised what it kept', () => {
    // Top 3 of the six logits: {4, 0, 1}, renormalised 0.665 0.245 0.090. The top two reach 0.85 there, while over
    // the full softmax they hold only 0.827 (so top-p applied before renormalising would keep three).
    const p = toProbs(logits, { temperature: 1, topK: 3, topP: 0.85, seed: 0 });
    expect(Array.from(p.keys()).filter((i) => (p[i] as number) > 0)).toEqual([0, 4]);
    expect((p[4] as number) + (p[0] as number)).toBeCloseTo(1, 6);
  });

  it('with top-k set, a row holding only its top k logits gives the same probabilities bit for bit', () => {
    const rng = new Rng(5);
    for (let t = 0; t < 50; t++) {
      const row = Float32Array.from({ length: 300 }, () => 4 * (rng.next() - 0.5));
      for (const params of [
        { temperature: 0.7, topK: 20, topP: 1, seed: 0 },
        { temperature: 1.3, topK: 40, topP: 0.8, seed: 0 },
        { temperature: 1, topK: 1, topP: 0.5, seed: 0 },
      ]) {
        const kept = topK(row, params.topK);
        const sparse = new Float32Array(row.length).fill(Number.NEGATIVE_INFINITY);
        for (const i of kept) sparse[i] = row[i] as number;
        expect(toProbs(sparse, params)).toEqual(toProbs(row, params));
      }
    }
  });

  it('the nucleus grows past its first candidate list on a flat distribution', () => {
    const flat = new Float32Array(1000).fill(0);
    flat[999] = 0.5;
    const p = toProbs(flat, { temperature: 1, topK: 0, topP: 0.9, seed: 0 });
    const kept = Array.from(p.keys()).filter((i) => (p[i] as number) > 0);
    // 0.9 of the mass (900.58 of 1000.65): token 999 (1.65) and the 899 lowest-index others (ties: lower first).
    expect(kept.length).toBe(900);
    expect(kept[kept.length - 1]).toBe(999);
    expect(kept[kept.length - 2]).toBe(898);
  });
});

describe('Gumbel-top-k, sampled top-down', () => {
  it('the first two draws follow p(i) p(j) / (1 - p(i)), and the scores are the largest two of log p + Gumbel', () => {
    const p = toProbs(logits, { temperature: 1, topK: 0, topP: 1, seed: 0 });
    const rng = new Rng(11);
    const n = 60000;
    const pairs = new Map<string, number>();
    let first = 0;
    let second = 0;
    for (let i = 0; i < n; i++) {
      const [a, b] = gumbelTopK(p, 2, rng);
      if (!a || !b) throw new Error('two draws expected');
      expect(b.score).toBeLessThan(a.score);
      pairs.set(`${a.token},${b.token}`, (pairs.get(`${a.token},${b.token}`) ?? 0) + 1);
      first += a.score;
      second += b.score;
    }
    for (let i = 0; i < 6; i++) {
      for (let j = 0; j < 6; j++) {
        if (i === j) continue;
        const expected = ((p[i] as number) * (p[j] as number)) / (1 - (p[i] as number));
        expect(Math.abs((pairs.get(`${i},${j}`) ?? 0) / n - expected)).toBeLessThan(0.006);
      }
    }
    // The same two order statistics drawn bottom-up (one Gumbel per token), for their means.
    const ref = new Rng(12);
    let refFirst = 0;
    let refSecond = 0;
    for (let i = 0; i < n; i++) {
      const s = Array.from(p, (v) => Math.log(v) + ref.gumbel()).sort((x, y) => y - x);
      refFirst += s[0] as number;
      refSecond += s[1] as number;
    }
    expect(first / n).toBeCloseTo(0.5772, 1); // the largest is Gumbel(log 1): mean = Euler's constant
    expect(Math.abs(first / n - refFirst / n)).toBeLessThan(0.03);
    expect(Math.abs(second / n - refSecond / n)).toBeLessThan(0.03);
  });

  it('never draws a zero-probability token, and returns fewer when the support is smaller than k', () => {
    const p = Float32Array.from([0, 0.5, 0, 0.5, 0]);
    const rng = new Rng(2);
    for (let i = 0; i < 200; i++) {
      const d = gumbelTopK(p, 4, rng).map((x) => x.token);
      expect(d.sort()).toEqual([1, 3]);
    }
  });
});

describe('partial top-k selection', () => {
  it('equals a full sort on random vectors, ties broken by lower index', async () => {
    const rng = new Rng(3);
    for (let t = 0; t < 200; t++) {
      // Both paths: a sorted list for k <= 128, quickselect above; many ties (values 0..20).
      const v = Float32Array.from({ length: t % 2 ? 50 : 400 }, () => Math.round(rng.next() * 20));
      for (const k of [1, 2, 4, 7, 33, 50, 129, 300, 400, 500]) {
        const sorted = Array.from(v.keys()).sort((a, b) => (v[b] as number) - (v[a] as number) || a - b);
        expect(topK(v, k)).toEqual(sorted.slice(0, k));
      }
    }
  });
});

describe("a heads call's top guesses (softmaxTop)", () => {
  it('gives each row the k most probable tokens and their softmax probabilities, ties to the lower id', () => {
    const soft: SamplingParams = { temperature: 1, topK: 0, topP: 1, seed: 0 };
    const rng = new Rng(7);
    const vocab = 50;
    // Three rows, with ties on the largest value and across the cut in the second.
    const rows = Float32Array.from({ length: 3 * vocab }, () => Math.round(rng.next() * 20) / 4 - 2);
    rows.fill(9, vocab + 10, vocab + 13);
    const got = softmaxTop(rows, vocab, 4);
    expect(got.k).toBe(4);
    for (let r = 0; r < 3; r++) {
      const row = rows.subarray(r * vocab, (r + 1) * vocab);
      const probs = toProbs(row, soft);
      const ids = topK(row, 4);
      expect(Array.from(got.ids.subarray(r * 4, r * 4 + 4))).toEqual(ids);
      for (const [j, id] of ids.entries()) expect(got.probs[r * 4 + j]).toBeCloseTo(probs[id] as number, 6);
    }
    expect(Array.from(got.ids.subarray(4, 7))).toEqual([10, 11, 12]);
    // More wanted than the vocabulary holds: the whole row, in order.
    const all = softmaxTop(Float32Array.from([0, 2, 1]), 3, 8);
    expect([all.k, ...all.ids]).toEqual([3, 1, 2, 0]);
    expect(all.probs.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 6);
  });
});
