import { describe, expect, it } from 'vitest';
import { Rng, sampleFrom, sampleWithoutReplacement, topK } from './sampling';
import { chiSquare, totalVariation } from './testing/stats';
import { verifyGreedy, verifyRejection, verifyTypical } from './verify';

const T1 = { temperature: 1, topK: 0, topP: 1, seed: 0 };

function randomDist(v: number, rng: Rng, sharp = 1.5): Float32Array {
  const x = Float32Array.from({ length: v }, () => Math.exp(sharp * rng.gumbel()));
  const s = x.reduce((a, b) => a + b, 0);
  return x.map((y) => y / s);
}

const logitsOf = (p: Float32Array) => p.map((x) => Math.log(Math.max(x, 1e-30)));

describe('verification rules', () => {
  it('greedy follows argmax children and emits the argmax where none matches', () => {
    const rows = [
      Float32Array.of(0, 5, 1),
      Float32Array.of(4, 0, 0),
      Float32Array.of(9, 0, 0),
      Float32Array.of(1, 0, 0),
    ];
    const tree = { tokens: [0, 2, 1, 0], parents: [-1, 0, 0, 2] };
    const r = verifyGreedy(tree, (n) => rows[n] as Float32Array);
    expect(r.path).toEqual([0, 2, 3]); // 1 is the argmax at the root (node 2), then 0 (node 3)
    expect(r.token).toBe(0); // leaf: bonus = argmax of row 3
    expect(r.kind).toBe('bonus');
    expect(r.status).toEqual(['root', 'unreached', 'accepted', 'accepted']);
  });

  // One level, vocabulary 6, three children: the lossless-trees.md experiment.
  function oneLevel(children: 'without-replacement' | 'iid-topk', draws: number): { tv: number; p: number } {
    const rng = new Rng(11);
    const p = randomDist(6, rng);
    const q = randomDist(6, rng);
    const below = randomDist(6, rng);
    const counts = new Array(6).fill(0);
    for (let i = 0; i < draws; i++) {
      const kids = children === 'without-replacement' ? sampleWithoutReplacement(q, 3, rng) : topK(q, 3);
      const tree = { tokens: [0, ...kids], parents: [-1, 0, 0, 0], draftProbs: [q, null, null, null] };
      // Node 0 holds p; the children's rows are the target one level down (only used for the bonus after an accepted
      // child, which this test does not count): a different distribution, so a mix-up of rows would show.
      const r = verifyRejection(tree, (n) => logitsOf(n === 0 ? p : below), T1, rng);
      const out = r.path.length > 1 ? tree.tokens[r.path[1] as number] : r.token;
      counts[out as number]++;
    }
    return { tv: totalVariation(counts, Array.from(p)), p: chiSquare(counts, Array.from(p)).pValue };
  }

  it('recursive rejection sampling over children drawn without replacement is exactly p (one level, 200k draws)', () => {
    const r = oneLevel('without-replacement', 200_000);
    expect(r.tv).toBeLessThan(Math.sqrt(6 / 200_000)); // the noise level
    expect(r.p).toBeGreaterThan(1e-3);
  });

  it('negative control: deterministic top-k children under sampling are biased, and the test sees it', () => {
    const r = oneLevel('iid-topk', 200_000);
    expect(r.tv).toBeGreaterThan(4 * Math.sqrt(6 / 200_000)); // four times the noise level
    expect(r.p).toBeLessThan(1e-9);
  });

  it("a single child is Leviathan et al.'s chain rule, exactly p", () => {
    const rng = new Rng(5);
    const p = randomDist(8, rng);
    const q = randomDist(8, rng);
    const counts = new Array(8).fill(0);
    for (let i = 0; i < 100_000; i++) {
      const x = sampleFrom(q, rng);
      const tree = { tokens: [0, x], parents: [-1, 0], draftProbs: [q, null] };
      const r = verifyRejection(tree, () => logitsOf(p), T1, rng);
      counts[(r.path.length > 1 ? x : r.token) as number]++;
    }
    expect(chiSquare(counts, Array.from(p)).pValue).toBeGreaterThan(1e-3);
  });

  // Deterministic children (n-gram matches: no distribution) mixed with children drawn without replacement from q.
  function mixedLevel(rule: 'one-hot' | 'claimed-uniform', draws: number): { tv: number; p: number } {
    const rng = new Rng(23);
    const p = randomDist(6, rng);
    const q = randomDist(6, rng);
    const uniform = new Float32Array(6).fill(1 / 6);
    const counts = new Array(6).fill(0);
    for (let i = 0; i < draws; i++) {
      const sampled = sampleWithoutReplacement(q, 2, rng);
      // Two fixed guesses that differ from the sampled ones (a lookup's matches do not depend on the draft).
      const fixed = [0, 1, 2, 3, 4, 5].filter((t) => !sampled.includes(t)).slice(0, 2);
      const tokens = [9, ...sampled, ...fixed];
      const tree =
        rule === 'one-hot'
          ? {
              tokens,
              parents: [-1, 0, 0, 0, 0],
              draftProbs: [q, null, null, null, null],
              deterministic: [false, false, false, true, true],
            }
          : // The bug this guards against: pretending the fixed guesses were drawn from some distribution.
            { tokens: [9, ...fixed], parents: [-1, 0, 0], draftProbs: [uniform, null, null] };
      const r = verifyRejection(tree, () => logitsOf(p), T1, rng);
      counts[(r.path.length > 1 ? tree.tokens[r.path[1] as number] : r.token) as number]++;
    }
    return { tv: totalVariation(counts, Array.from(p)), p: chiSquare(counts, Array.from(p)).pValue };
  }

  it('deterministic children next to sampled ones are exactly p (one-hot steps, 200k draws)', () => {
    const r = mixedLevel('one-hot', 200_000);
    expect(r.tv).toBeLessThan(Math.sqrt(6 / 200_000));
    expect(r.p).toBeGreaterThan(1e-3);
  });

  it('negative control: deterministic guesses verified as if drawn from a distribution are biased', () => {
    const r = mixedLevel('claimed-uniform', 200_000);
    expect(r.tv).toBeGreaterThan(4 * Math.sqrt(6 / 200_000));
    expect(r.p).toBeLessThan(1e-9);
  });

  it('a node whose children are all deterministic (no draft distribution) verifies without one', () => {
    const rng = new Rng(3);
    const p = randomDist(5, rng);
    const counts = new Array(5).fill(0);
    for (let i = 0; i < 100_000; i++) {
      const tree = { tokens: [0, 2, 4], parents: [-1, 0, 0], draftProbs: [null, null, null] };
      const r = verifyRejection(tree, () => logitsOf(p), T1, rng);
      counts[(r.path.length > 1 ? tree.tokens[r.path[1] as number] : r.token) as number]++;
    }
    expect(chiSquare(counts, Array.from(p)).pValue).toBeGreaterThan(1e-3);
  });

  it('typical acceptance accepts confident tokens and keeps the deepest path (lossy by design)', () => {
    const peaked = Float32Array.of(10, 0, 0, 0);
    const tree = { tokens: [3, 0, 1, 0], parents: [-1, 0, 0, 1] };
    const r = verifyTypical(tree, () => peaked, T1, new Rng(1));
    expect(r.path).toEqual([0, 1, 3]);
  });
});
