import { describe, expect, it } from 'vitest';
import { MASKED } from './lm';
import { appendBias, chainBias, depths, keepIndices, pathTo, positionIds, treeAttentionBias } from './tree';

/** Random topological parent arrays. */
function randomParents(n: number, seed: number): number[] {
  let s = seed;
  const rand = () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s / 2 ** 32;
  };
  return Array.from({ length: n }, (_, i) => (i === 0 ? -1 : Math.floor(rand() * (i + 1)) - 1));
}

describe('token tree geometry (property tests over random trees)', () => {
  it('every node sees exactly the prefix, its ancestors and itself', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const n = 1 + (seed % 17);
      const parents = randomParents(n, seed);
      const prefix = seed % 5;
      const bias = treeAttentionBias(prefix, parents);
      const width = prefix + n;
      for (let i = 0; i < n; i++) {
        const ancestors = new Set(pathTo(parents, i));
        for (let j = 0; j < width; j++) {
          const visible = j < prefix || ancestors.has(j - prefix);
          expect(bias[i * width + j]).toBe(visible ? 0 : MASKED);
        }
      }
    }
  });

  it('a chain gives the ordinary causal mask', () => {
    const bias = chainBias(3, 4);
    const width = 7;
    for (let i = 0; i < 4; i++)
      for (let j = 0; j < width; j++) expect(bias[i * width + j]).toBe(j <= 3 + i ? 0 : MASKED);
  });

  it('positions are prefix length + depth; paths run root first; keep-indices list prefix then path slots', () => {
    for (let seed = 1; seed <= 100; seed++) {
      const parents = randomParents(12, seed);
      const d = depths(parents);
      expect(positionIds(9, parents)).toEqual(d.map((x) => 9 + x));
      for (let i = 0; i < parents.length; i++) {
        const path = pathTo(parents, i);
        expect(path[path.length - 1]).toBe(i);
        expect(path.length).toBe((d[i] as number) + 1);
        path.slice(1).forEach((n, k) => {
          expect(parents[n]).toBe(path[k]);
        });
        expect(keepIndices(9, path)).toEqual([...Array.from({ length: 9 }, (_, k) => k), ...path.map((n) => 9 + n)]);
      }
    }
  });

  it('rejects parents that are not in topological order', () => {
    expect(() => treeAttentionBias(0, [-1, 1])).toThrow(/topological/);
    expect(() => depths([0])).toThrow(/topological/);
  });

  it('appendBias: rows see the prefix, their listed slots and themselves only', () => {
    const extra = [[4], [5], []];
    const bias = appendBias(6, 4, extra);
    const width = 9;
    const visible = (i: number) => [...[0, 1, 2, 3], ...(extra[i] as number[]), 6 + i];
    for (let i = 0; i < 3; i++)
      for (let j = 0; j < width; j++) expect(bias[i * width + j]).toBe(visible(i).includes(j) ? 0 : MASKED);
  });
});
