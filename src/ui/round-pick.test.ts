import { describe, expect, it } from 'vitest';
import { mostInformativeRound } from './round-pick';

const round = (accepted: number, nodes: number) => ({
  accepted: Array.from({ length: accepted }, (_, i) => ({ id: i, text: 'x' })),
  tree: { tokens: Array.from({ length: nodes }, (_, i) => i) },
});

describe('mostInformativeRound', () => {
  it('picks the round with the most accepted tokens, not the last one', () => {
    expect(mostInformativeRound([round(1, 5), round(3, 4), round(0, 1)])).toBe(1);
  });
  it('breaks ties by the larger tree, then by the earlier round', () => {
    expect(mostInformativeRound([round(2, 3), round(2, 7), round(2, 7), round(1, 9)])).toBe(1);
  });
  it('is -1 with no rounds and 0 with one', () => {
    expect(mostInformativeRound([])).toBe(-1);
    expect(mostInformativeRound([round(0, 1)])).toBe(0);
  });
});
