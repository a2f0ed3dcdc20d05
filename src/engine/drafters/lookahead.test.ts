import { describe, expect, it } from 'vitest';
import { generateAll } from '../generate';
import { MASKED } from '../lm';
import { GREEDY, Rng } from '../sampling';
import { hashedLogits, ToyLM } from '../testing/toy-lm';
import { positionIds, roundBias } from '../tree';
import { type Drafter, type DraftRequest, type DraftTree, rootOnly } from './drafter';
import { LOOKAHEAD_DEFAULTS, LookaheadDrafter, windowLayout } from './lookahead';
import { NoDrafter } from './none';

const tokenizer = { decode: (ids: readonly number[]) => ids.map((i) => String.fromCharCode(97 + (i % 26))).join('') };

describe('lookahead decoding', () => {
  it("the window's mask is the paper's: (l, c) sees level 0 up to column c and its own column up to level l", () => {
    for (const W of [2, 3, 5, 7]) {
      for (const levels of [1, 2, 3, 4]) {
        const { cells, sees, index } = windowLayout(W, levels);
        expect(cells.length).toBe(W - 1 + (levels - 1) * W);
        cells.forEach(({ level, column }, k) => {
          const expected = new Set<number>();
          for (let c = 1; c <= column; c++) expected.add(index(0, c));
          for (let l = 1; l <= level; l++) expected.add(index(l, column));
          expected.delete(k);
          expect(new Set(sees[k]?.aux)).toEqual(expected);
          expect(sees[k]?.tree).toEqual([0]); // column 0 of level 0: the root
        });
      }
    }
  });

  it('in the round call every window node sees one token at each position up to its own, and tree nodes never see the window', () => {
    const prefix = 6;
    const parents = [-1, 0, 1, 0, 3]; // the root and two pool n-grams
    for (const [W, levels] of [
      [5, 3],
      [4, 2],
      [3, 1],
    ] as const) {
      const layout = windowLayout(W, levels);
      const root = prefix; // the root's position: the committed prefix is 0..prefix-1
      const positions = [...positionIds(root, parents), ...layout.cells.map((c) => root + c.offset)];
      const bias = roundBias(prefix, parents, layout);
      const q = parents.length;
      const n = q + layout.cells.length;
      const width = prefix + n;
      const positionOf = (j: number) => (j < prefix ? j : (positions[j - prefix] as number));
      for (let i = 0; i < n; i++) {
        const seen = [...Array(width).keys()].filter((j) => bias[i * width + j] === 0).map(positionOf);
        if (i < q) {
          for (let j = prefix + q; j < width; j++) expect(bias[i * width + j]).toBe(MASKED);
        } else {
          const own = positions[i] as number;
          expect([...seen].sort((a, b) => a - b)).toEqual(Array.from({ length: own + 1 }, (_, k) => k));
        }
      }
    }
  });

  it('gives plain greedy decoding token for token, and its Jacobi pool alone saves target calls on a Markov toy model', async () => {
    // Order-1 toy target: the next token depends on the last one only, so greedy text cycles and Jacobi converges.
    const fn = hashedLogits(40, 7, 1, 4);
    const target = new ToyLM(40, fn);
    const plain = await generateAll({ target, drafter: new NoDrafter(), tokenizer }, [3, 5], {
      maxNewTokens: 60,
      sampling: GREEDY,
    });
    const drafter = new LookaheadDrafter({ ...LOOKAHEAD_DEFAULTS, poolFromContext: false });
    const r = await generateAll({ target, drafter, tokenizer }, [3, 5], { maxNewTokens: 60, sampling: GREEDY });
    expect(r.tokens).toEqual(plain.tokens);
    expect(r.stats.tau).toBeGreaterThan(1.5);
    expect(r.stats.meanCallWidth).toBeGreaterThan(r.stats.meanTreeSize); // the window rode along
  });

  it("its window rides along in another drafter's rounds (auto) and its pool grows there as in its own rounds", async () => {
    const fn = hashedLogits(40, 7, 1, 4);
    const target = new ToyLM(40, fn);
    const options = { ...LOOKAHEAD_DEFAULTS, poolFromContext: false };
    const rider = new LookaheadDrafter(options);
    // Plain decoding's rounds carrying the window, as auto carries it on the arms it did not choose.
    const host: Drafter = {
      name: 'host',
      calls: 0,
      async propose(req: DraftRequest): Promise<DraftTree> {
        const tree = rootOnly(req.committed);
        const aux = rider.ride(req, req.maxNodes);
        if (aux) tree.aux = aux;
        return tree;
      },
      accept: (tree, result, outputs) => rider.observe(tree, result, outputs),
      reset: () => {},
    };
    const r = await generateAll({ target, drafter: host, tokenizer }, [3, 5], { maxNewTokens: 30, sampling: GREEDY });
    expect(r.stats.meanCallWidth).toBeGreaterThan(r.stats.meanTreeSize);
    const req = {
      committed: [3, 5, ...r.tokens],
      maxNodes: 64,
      maxDepth: 8,
      sampling: GREEDY,
      rng: new Rng(1),
      eos: new Set<number>(),
    };
    // Its first round of its own verifies pool n-grams; a drafter that did not ride has none.
    expect((await rider.propose(req)).tokens.length).toBeGreaterThan(1);
    expect((await new LookaheadDrafter(options).propose(req)).tokens.length).toBe(1);
  });
});
