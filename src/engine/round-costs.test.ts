/**
 * RoundCosts: a chain's round costs measured in the rounds, from the calibration until rounds are measured.
 */
import { describe, expect, it } from 'vitest';
import type { CostModel } from './drafters/method';
import { RoundCosts } from './round-costs';

/** Calibrated: T(q) = 2 + q ms (T(1) = 3 ms), a draft call 0.1 of a target call (0.3 ms). */
const CALIBRATED: CostModel = {
  curve: { context: 64, points: [1, 2, 4, 8, 16].map((q) => ({ q, ms: 2 + q, relative: (2 + q) / 3 })) },
  draftRelative: 0.1,
  draftCurve: { context: 64, points: [] },
};

const round = (width: number, verifyMs: number, o: { draftMs?: number; gapMs?: number | null } = {}) => ({
  width,
  draftCalls: width - 1,
  draftMs: o.draftMs ?? 0.3 * (width - 1),
  verifyMs,
  gapMs: o.gapMs ?? null,
});

describe('round costs measured in the rounds', () => {
  it('start from the calibration', () => {
    const costs = new RoundCosts(() => CALIBRATED);
    expect(costs.verifyMs(4)).toBeCloseTo(6, 9);
    expect(costs.draftCallMs()).toBeCloseTo(0.3, 9);
    expect(costs.betweenMs()).toBe(0);
    expect(costs.chainRoundMs(3)).toBeCloseTo(6 + 0.9, 9);
  });

  it("leave out a fresh drafter's first round and hold any later round to twice the estimate; a lasting change still comes through", () => {
    const costs = new RoundCosts(() => CALIBRATED);
    // Cold code: a first round 10x slow counts for nothing.
    costs.record(round(3, 50, { draftMs: 6 }));
    expect(costs.verifyMs(3)).toBeCloseTo(5, 9);
    expect(costs.draftCallMs()).toBeCloseTo(0.3, 9);
    // A later one (a pause) counts for at most twice what was expected.
    costs.record(round(3, 50, { draftMs: 6 }));
    expect(costs.verifyMs(3)).toBeLessThanOrEqual(2 * 5 + 1e-9);
    expect(costs.draftCallMs()).toBeLessThanOrEqual((2 * 0.6 + 2 * 0.3) / 4 + 1e-9);
    // Three times slower for good: the estimates follow.
    for (let r = 0; r < 60; r++) costs.record(round(3, 15, { draftMs: 1.8 }));
    expect(costs.verifyMs(3)).toBeGreaterThan(14.5);
    expect(costs.draftCallMs()).toBeGreaterThan(0.85);
  });

  it('follow the measured rounds: a width verified reads its own time, a draft call and the time between rounds theirs', () => {
    const costs = new RoundCosts(() => CALIBRATED);
    for (let r = 0; r < 60; r++) costs.record(round(3, 10, { draftMs: 2, gapMs: 1.5 }));
    expect(costs.verifyMs(3)).toBeGreaterThan(9.9);
    expect(costs.draftCallMs()).toBeGreaterThan(0.95);
    expect(costs.betweenMs()).toBeGreaterThan(1.3); // 0 before any were measured, counting as two rounds
    // Until a second width is measured, the others follow the calibrated shape, moved as width 3 moved (5 -> 10).
    expect(costs.verifyMs(5)).toBeGreaterThan(13.9);
    expect(costs.verifyMs(5)).toBeLessThan(14.1);
  });

  it('extend a line through the measured widths to the others, never falling with width', () => {
    // Verifying costs 4 ms at any width here, where the calibration said 2 + q: the widths not yet tried are as cheap.
    const flat = new RoundCosts(() => CALIBRATED);
    for (let r = 0; r < 30; r++) flat.record(round(2 + (r % 2), 4));
    // (calibrated and moved: 12.4; the calibrated slope, as the prior of a slope measured exactly, pulls it by 2%)
    expect(flat.verifyMs(12)).toBeGreaterThan(3.9);
    expect(flat.verifyMs(12)).toBeLessThan(4.3);
    // Measured falling with width (noise): taken as flat, not as cheaper the wider.
    const noisy = new RoundCosts(() => CALIBRATED);
    for (let r = 0; r < 30; r++) noisy.record(round(2 + (r % 2), r % 2 ? 4 : 5));
    expect(noisy.verifyMs(12)).toBeGreaterThan(4.4);
    expect(noisy.verifyMs(12)).toBeLessThan(4.6);
    // Steeper than calibrated: 1 ms more per token.
    const steep = new RoundCosts(() => CALIBRATED);
    for (let r = 0; r < 30; r++) steep.record(round(2 + (r % 3), 2 * (2 + (r % 3))));
    expect(Math.abs(steep.verifyMs(10) - 20)).toBeLessThan(0.2);
  });

  it("draw the line's slope towards the calibrated one where the calls vary from call to call (a real GPU)", () => {
    // Flat as calibrated on an H200 (T(q) 23.5-24.3 ms up to q = 32), each call 24-40 ms at random; a chain verified
    // at two widths side by side. Fitted alone, the noise set the line's slope.
    const flat: CostModel = {
      curve: { context: 64, points: [1, 2, 4, 8, 16, 32].map((q) => ({ q, ms: 24, relative: 1 })) },
      draftRelative: 0.07,
      draftCurve: { context: 64, points: [] },
    };
    // Width 2: 27, 40, 25, 36, 24 ms (30.4 on average); width 3: 38, 29, 33, 26, 39 (33.0).
    const calls = [27, 38, 40, 29, 25, 33, 36, 26, 24, 39];
    const costs = new RoundCosts(() => flat);
    calls.forEach((ms, r) => {
      costs.record(round(2 + (r % 2), ms, { draftMs: 1.7 * (1 + (r % 2)) }));
    });
    // Fitted alone: 2.6 ms a token. One token more costs a draft call (1.7 ms) and next to nothing to verify.
    const perToken = (costs.verifyMs(17) - costs.verifyMs(4)) / 13;
    expect(perToken).toBeGreaterThanOrEqual(0);
    expect(perToken).toBeLessThan(0.5);
  });

  it('ask for the width of the whole call: a chain verified beside nodes riding along reads the call it will make', () => {
    const costs = new RoundCosts(() => CALIBRATED);
    // Chains of 1-3 tokens, each verified beside 14 more nodes: calls of 16 to 18 (T = 2 + q).
    for (let r = 0; r < 40; r++) {
      const k = 1 + (r % 3);
      costs.record({ width: k + 15, draftCalls: k, draftMs: 0.3 * k, verifyMs: 2 + (k + 15), gapMs: null });
    }
    expect(costs.extraWidth()).toBeCloseTo(14, 6);
    // A chain of 2 tokens: a call of 17 (19 ms) and two draft calls.
    expect(costs.chainRoundMs(2)).toBeCloseTo(19 + 0.6, 1);
  });

  it('leave out a pause between rounds (a caller away, a new prompt), and start afresh when cleared', () => {
    const costs = new RoundCosts(() => CALIBRATED);
    for (let r = 0; r < 20; r++) costs.record(round(3, 5, { gapMs: r === 10 ? 5000 : 1 }));
    expect(costs.betweenMs()).toBeLessThan(1);
    costs.clear();
    expect(costs.verifyMs(4)).toBeCloseTo(6, 9);
    expect(costs.betweenMs()).toBe(0);
  });
});
