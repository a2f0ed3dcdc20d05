import { describe, expect, it } from 'vitest';
import { Rng, sampleFrom, sampleWithoutReplacement, toProbs, topK } from './sampling';

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

describe('partial top-k selection', () => {
  it('equals a full sort on random vectors, ties broken by lower index', async () => {
    const rng = new Rng(3);
    for (let t = 0; t < 200; t++) {
      const v = Float32Array.from({ length: 50 }, () => Math.round(rng.next() * 20));
      for (const k of [1, 2, 4, 7]) {
        const sorted = Array.from(v.keys()).sort((a, b) => (v[b] as number) - (v[a] as number) || a - b);
        expect(topK(v, k)).toEqual(sorted.slice(0, k));
      }
    }
  });
});
