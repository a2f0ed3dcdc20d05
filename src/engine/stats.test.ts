import { describe, expect, it } from 'vitest';
import { pooledAcceptance } from './stats';

describe('pooledAcceptance', () => {
  it('pools the counts of several generations (not the mean of their rates); depths none reached are 0', () => {
    const a = { acceptanceCounts: { offered: [10, 4, 0], accepted: [9, 1, 0] } };
    const b = { acceptanceCounts: { offered: [2], accepted: [0] } };
    // Depth 1: 9 of 12 (the mean of the rates would be 0.45); depth 2: 1 of 4; depth 3: never offered.
    expect(pooledAcceptance([a, b])).toEqual([0.75, 0.25, 0]);
    expect(pooledAcceptance([])).toEqual([]);
  });
});
