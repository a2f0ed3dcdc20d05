import { describe, expect, it } from 'vitest';
import type { RoundEvent } from './events';
import { armsText, pooledAcceptance, StatsTracker, statsFromEvents } from './stats';

describe('pooledAcceptance', () => {
  it('pools the counts of several generations (not the mean of their rates); depths none reached are 0', () => {
    const a = { acceptanceCounts: { offered: [10, 4, 0], accepted: [9, 1, 0] } };
    const b = { acceptanceCounts: { offered: [2], accepted: [0] } };
    // Depth 1: 9 of 12 (the mean of the rates would be 0.45); depth 2: 1 of 4; depth 3: never offered.
    expect(pooledAcceptance([a, b])).toEqual([0.75, 0.25, 0]);
    expect(pooledAcceptance([])).toEqual([]);
  });
});

describe('rounds per drafter', () => {
  const path = (n: number) => ({
    path: Array.from({ length: n }, (_, i) => i),
    token: 0,
    kind: 'bonus' as const,
    status: [],
  });
  const chain = (n: number) => Array.from({ length: n }, (_, i) => i - 1);

  it("counts the rounds, tokens and time of each drafter a round's note names, in order of first use", () => {
    const t = new StatsTracker();
    t.round(chain(5), path(5), 5, { draft: 1, verify: 2, total: 4 }, 0, 0, 'eagle');
    t.round(chain(9), path(9), 9, { draft: 0, verify: 2, total: 3 }, 0, 0, 'lookup (copy)');
    t.round(chain(3), path(2), 2, { draft: 1, verify: 2, total: 4 }, 0, 0, 'eagle');
    const arms = t.summary(0).arms;
    expect(arms).toEqual([
      { name: 'eagle', rounds: 2, tokens: 7, ms: 8 },
      { name: 'lookup (copy)', rounds: 1, tokens: 9, ms: 3 },
    ]);
    expect(armsText(arms ?? [])).toBe('eagle 2 (3.5 tokens each), lookup (copy) 1 (9.0 tokens each)');
    // A method whose notes name no drafter has none.
    const plain = new StatsTracker();
    plain.round(chain(1), path(1), 1, { draft: 0, verify: 2, total: 2 });
    expect(plain.summary(0).arms).toBeUndefined();
  });

  it("rebuilds them from round events (the element's live view)", () => {
    const event = (arm: string | undefined, accepted: number): RoundEvent => ({
      round: 0,
      accepted: Array.from({ length: accepted }, () => ({ id: 1, text: 'a' })),
      rejected: [],
      target: [{ id: 2, text: 'b' }],
      targetKind: 'bonus',
      tree: {
        tokens: chain(accepted + 1),
        texts: [],
        parents: chain(accepted + 1),
        status: ['root', ...Array.from({ length: accepted }, () => 'accepted' as const)],
      },
      ...(arm ? { note: { text: `auto: ${arm}`, fields: { arm } } } : {}),
      counts: { targetCalls: 1, draftCalls: 0, tokens: accepted + 1, targetBytes: 0 },
      timings: { draftMs: 1, verifyMs: 1, overheadMs: 0, totalMs: 2 },
    });
    const stats = statsFromEvents([event('merged', 2), event('eagle', 4), event('merged', 0)]);
    expect(stats.arms).toEqual([
      { name: 'merged', rounds: 2, tokens: 4, ms: 4 },
      { name: 'eagle', rounds: 1, tokens: 5, ms: 2 },
    ]);
    expect(statsFromEvents([event(undefined, 1)]).arms).toBeUndefined();
  });
});
