/**
 * Acceptance priors: which ones apply to the loaded models, and the round they predict on a measured curve.
 */
import { describe, expect, it } from 'vitest';
import type { CostCurve } from './calibrate';
import { chainRound, readPrior } from './priors';

const TARGET = { weightBytes: 1000, digest: 'aa', layers: 4, hidden: 64, vocab: 256 };
const DRAFTER = { weightBytes: 50, digest: 'bb' };
const entry = (over: Record<string, unknown> = {}) => ({
  version: 1,
  about: 'test',
  target: TARGET,
  drafter: DRAFTER,
  depths: [0.8, 0.9, 0.7],
  offered: [100, 80, 10],
  measured: {},
  ...over,
});

/** A curve from (q, T(q)/T(1)) pairs, T(1) = 10 ms. */
const curve = (points: [number, number][]): CostCurve => ({
  context: 64,
  points: points.map(([q, relative]) => ({ q, ms: 10 * relative, relative })),
});
const STEEP = curve([
  [1, 1],
  [2, 1.3],
  [4, 2],
  [8, 3.5],
  [16, 6.5],
]);
const FLAT = curve([
  [1, 1],
  [8, 1.05],
  [17, 1.1],
]);

describe('acceptance priors', () => {
  it('applies only to the models it was measured with, and leaves out depths resting on too few rounds', () => {
    expect(readPrior(undefined, TARGET, DRAFTER)).toBeNull();
    expect(readPrior(entry(), TARGET, DRAFTER)).toEqual({ prior: { depths: [0.8, 0.9] } });
    expect(readPrior(entry(), { ...TARGET, weightBytes: 1001 }, DRAFTER)).toEqual({
      ignored: 'acceptance_prior was measured with another target',
      quiet: true,
    });
    expect(readPrior(entry(), { ...TARGET, layers: 5 }, DRAFTER)).toMatchObject({
      ignored: expect.stringMatching(/target/),
    });
    // The same shape and size retrained: the weights' digest differs.
    expect(readPrior(entry(), { ...TARGET, digest: 'ab' }, DRAFTER)).toEqual({
      ignored: 'acceptance_prior was measured with another target',
      quiet: true,
    });
    for (const other of [
      { ...DRAFTER, weightBytes: 51 },
      { ...DRAFTER, digest: 'bc' },
    ])
      expect(readPrior(entry(), TARGET, other)).toEqual({
        ignored: 'acceptance_prior was measured with other weights of this drafter',
      });
  });

  it('names a damaged prior in one line instead of using it', () => {
    for (const bad of [
      5,
      'x',
      entry({ version: 2 }),
      entry({ depths: [0.8, 1.5, 0.7] }),
      entry({ depths: [0.8, 0.9] }),
      entry({ depths: [0.8, null, 0.7] }),
      entry({ target: { weightBytes: 1000 } }),
      entry({ drafter: null }),
      entry({ drafter: { weightBytes: 50 } }),
      entry({ offered: [100, -1, 10] }),
      entry({ depths: Array.from({ length: 65 }, () => 0.5), offered: Array.from({ length: 65 }, () => 100) }),
      [0.5],
    ]) {
      const r = readPrior(bad, TARGET, DRAFTER);
      expect(r, JSON.stringify(bad)).toMatchObject({ ignored: expect.stringMatching(/^acceptance_prior is/) });
    }
    // Each says what is wrong.
    expect(readPrior(entry({ offered: [100, -1, 10] }), TARGET, DRAFTER)).toEqual({
      ignored: 'acceptance_prior is damaged: each offered must be a count of rounds',
    });
    expect(readPrior(entry({ depths: [0.8, 1.5, 0.7] }), TARGET, DRAFTER)).toEqual({
      ignored: 'acceptance_prior is damaged: each depth must be a share from 0 to 1',
    });
    expect(readPrior(entry({ offered: [5, 5, 5] }), TARGET, DRAFTER)).toEqual({
      ignored: 'acceptance_prior rests on too few rounds',
    });
  });

  it('predicts the chain that pays best: short on a steep curve, as deep as measured on a flat one', () => {
    const prior = { depths: Array.from({ length: 16 }, () => 0.9) };
    const steep = chainRound(prior, STEEP, { relative: 0.1, maxDepth: 32 }, 'model');
    const flat = chainRound(prior, FLAT, { relative: 0.001, maxDepth: 32 }, 'model');
    expect(steep?.length).toBeGreaterThanOrEqual(1);
    expect(steep?.length).toBeLessThanOrEqual(4);
    expect(flat?.length).toBe(16);
    // 1 + 0.9 + 0.9^2 + ... + 0.9^16 tokens for T(17) + 16 calls of 0.001.
    expect(flat?.tokens).toBeCloseTo((1 - 0.9 ** 17) / 0.1, 6);
    expect(flat?.cost).toBeCloseTo(1.1 + 0.016, 6);
    // In real time: the same round in seconds (T(1) = 10 ms).
    expect(chainRound(prior, FLAT, { relative: 0.001, maxDepth: 32 }, 'time')?.cost).toBeCloseTo(0.01116, 6);
    // Less likely guesses stop paying sooner on the same curve.
    expect(
      chainRound({ depths: prior.depths.map(() => 0.8) }, FLAT, { relative: 0.01, maxDepth: 32 }, 'model')?.length,
    ).toBeLessThan(16);
    // A drafter dearer than what its guesses bring: plain decoding's round.
    expect(chainRound({ depths: [0.2, 0.2] }, STEEP, { relative: 0.5, maxDepth: 32 }, 'model')).toEqual({
      tokens: 1,
      cost: 1,
      length: 0,
    });
    // Medusa's heads: one call a round whatever the depth, so deeper chains cost no more calls.
    expect(chainRound(prior, FLAT, { relative: 0.05, perRound: true, maxDepth: 32 }, 'model')?.cost).toBeCloseTo(
      1.1 + 0.05,
      6,
    );
    expect(chainRound(prior, FLAT, { relative: 0.05, maxDepth: 32 }, 'model')?.length).toBeLessThan(16);
    // Not deeper than the drafter drafts: a prior of 10,000 certain guesses predicts no more than its 12.
    const certain = { depths: Array.from({ length: 10_000 }, () => 1) };
    expect(chainRound(certain, FLAT, { relative: 0.001, maxDepth: 12 }, 'model')).toMatchObject({
      tokens: 13,
      length: 12,
    });
    // No curve measured: no prediction.
    expect(chainRound(prior, { context: 64, points: [] }, { relative: 0.1, maxDepth: 32 }, 'model')).toBeNull();
  });
});
