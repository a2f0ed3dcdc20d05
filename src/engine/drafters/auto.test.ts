/**
 * `auto` between arms: it settles on the arm with the best measured throughput, revisits the others at a rate that
 * shrinks with how far behind they are, and counts model calls once when arms share one draft model.
 */
import { describe, expect, it } from 'vitest';
import { GREEDY, Rng, type SamplingParams } from '../sampling';
import { MemoryStore } from '../store';
import type { VerifyResult } from '../verify';
import { AutoDrafter, revisitAfter } from './auto';
import type { Drafter, DraftRequest, DraftTree, TargetOutputs } from './drafter';
import type { CostModel } from './method';

/** An arm that drafts a chain of `length` tokens, of which the target accepts `accepted`; `calls` is shared. */
class Arm implements Drafter {
  constructor(
    readonly name: string,
    private readonly length: number,
    public accepted: number,
    private readonly counter: { calls: number },
    /** Real time a round of this arm takes (under greedy decoding auto compares arms on real time). */
    private readonly delayMs = 0,
    /** Its first rounds' time instead (a cold start: code not yet compiled, new shapes). */
    private readonly cold: { rounds: number; ms: number } = { rounds: 0, ms: 0 },
  ) {}
  private proposed = 0;
  get calls(): number {
    return this.counter.calls;
  }
  async propose(req: DraftRequest): Promise<DraftTree> {
    const delay = this.proposed++ < this.cold.rounds ? this.cold.ms : this.delayMs;
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));
    this.counter.calls += this.length;
    const tree: DraftTree = { tokens: [req.committed.at(-1) as number], parents: [-1], draftProbs: [null] };
    for (let i = 0; i < this.length; i++) {
      tree.tokens.push(i);
      tree.parents.push(i);
      tree.draftProbs.push(null);
    }
    return tree;
  }
  accept(): void {}
  reset(): void {}
}

/** A flat verify-cost curve (a GPU): a round costs one call whatever its width. */
const FLAT: CostModel = {
  curve: { context: 64, points: [1, 2, 4, 8, 16].map((q) => ({ q, ms: 1, relative: 1 })) },
  draftRelative: 0,
  draftCurve: { context: 64, points: [] },
};
const OUTPUTS: TargetOutputs = { logits: () => new Float32Array(0), auxLogits: () => new Float32Array(0) };

/** Sampling: arms compared on the cost model (greedy compares real time). */
const SAMPLED: SamplingParams = { temperature: 1, topK: 0, topP: 1, seed: 1 };

async function run(
  auto: AutoDrafter,
  arms: Arm[],
  rounds: number,
  sampling = SAMPLED,
): Promise<{ chosen: Map<string, number>; why: string[] }> {
  const chosen = new Map<string, number>();
  const why: string[] = [];
  const req: DraftRequest = {
    committed: [1, 2, 3],
    maxNodes: 32,
    maxDepth: 32,
    sampling,
    rng: new Rng(1),
    eos: new Set(),
  };
  for (let r = 0; r < rounds; r++) {
    const tree = await auto.propose(req);
    const name = auto.note()?.fields?.arm as string;
    why.push(auto.note()?.text ?? '');
    chosen.set(name, (chosen.get(name) ?? 0) + 1);
    const arm = arms.find((a) => a.name === name) as Arm;
    const result: VerifyResult = {
      path: Array.from({ length: Math.min(arm.accepted, tree.tokens.length - 1) + 1 }, (_, i) => i),
      token: 0,
      kind: 'correction',
      status: [],
    };
    auto.accept(tree, result, OUTPUTS);
  }
  return { chosen, why };
}

describe('auto between arms', () => {
  it('waits longer to revisit an arm the further it is behind', () => {
    expect(revisitAfter(1, 1)).toBe(12);
    expect(revisitAfter(1.3, 1)).toBe(12);
    expect(revisitAfter(0.75, 1)).toBe(63);
    expect(revisitAfter(0.1, 1)).toBe(225);
    expect(revisitAfter(0, 1)).toBe(225 + 25);
    expect(revisitAfter(0, 0)).toBe(12);
  });

  it('settles on the best arm: the others get about one round in a hundred, and each is still revisited', async () => {
    const counter = { calls: 0 };
    const arms = [
      new Arm('plain', 0, 0, { calls: 0 }),
      new Arm('weak', 4, 1, { calls: 0 }),
      new Arm('good', 4, 3, counter),
      new Arm('close', 4, 2, counter),
    ];
    const auto = new AutoDrafter(
      arms.map((a) => ({ name: a.name, drafter: a })),
      () => FLAT,
    );
    await run(auto, arms, 200);
    // Once every arm has its measurements (early on, each is revisited often until it has a few).
    const { chosen } = await run(auto, arms, 800);
    expect(chosen.get('good')).toBeGreaterThan(720);
    for (const name of ['plain', 'weak', 'close']) expect(chosen.get(name)).toBeGreaterThan(2);
    // Revisits go to the close arm far more often than to the far ones.
    expect(chosen.get('close') as number).toBeGreaterThan(2 * (chosen.get('plain') as number));
    // Two arms share one counter (one draft model): each call is counted once.
    expect(auto.calls).toBe(counter.calls + (arms[1] as Arm).calls);
  });

  it('compares real time under greedy decoding and the cost model under sampling, measuring afresh on a change', async () => {
    const arms = [new Arm('plain', 0, 0, { calls: 0 }), new Arm('good', 4, 3, { calls: 0 })];
    const auto = new AutoDrafter(
      arms.map((a) => ({ name: a.name, drafter: a })),
      () => FLAT,
    );
    const sampled = await run(auto, arms, 10);
    expect(sampled.why[0]).toContain('trying plain');
    expect(sampled.why.at(-1)).toContain('tokens/call)');
    const greedy = await run(auto, arms, 10, GREEDY);
    expect(greedy.why[0]).toContain('trying plain');
    expect(greedy.why.at(-1)).toContain('tok/s)');
    // Without a cost model, real time whatever the sampling.
    const bare = new AutoDrafter(arms.map((a) => ({ name: a.name, drafter: a })));
    expect((await run(bare, arms, 10)).why.at(-1)).toContain('tok/s)');
  });

  it('follows the text: an arm that fell behind and then recovered takes over again at its next revisit', async () => {
    const arms = [new Arm('a', 4, 2, { calls: 0 }), new Arm('b', 4, 3, { calls: 0 })];
    const auto = new AutoDrafter(
      arms.map((x) => ({ name: x.name, drafter: x })),
      () => FLAT,
    );
    expect((await run(auto, arms, 300)).chosen.get('b')).toBeGreaterThan(280);
    (arms[1] as Arm).accepted = 0; // b's drafts stop holding: a takes over within a few rounds
    expect((await run(auto, arms, 300)).chosen.get('a')).toBeGreaterThan(280);
    (arms[1] as Arm).accepted = 3; // and hold again
    // With its history discounted per round of the whole run (not per round of its own), b's old bad record has
    // faded by its next revisit, and one good round puts it back in front (per own round: 221 rounds, measured).
    const after = await run(auto, arms, 300);
    expect(after.chosen.get('b')).toBeGreaterThan(250);
  });

  it('a cold start does not decide: an arm whose first rounds ran slow is measured again soon and takes over', async () => {
    // good's first two rounds take 40 ms (its code and shapes cold), then 4 ms like plain's; it brings 4 tokens a
    // round against plain's 1. Counting both cold rounds at face value, good looked 2.5x slower than plain and would
    // have waited 150 rounds for its next chance.
    const arms = [
      new Arm('plain', 0, 0, { calls: 0 }, 4),
      new Arm('good', 4, 3, { calls: 0 }, 4, { rounds: 2, ms: 40 }),
    ];
    const auto = new AutoDrafter(arms.map((a) => ({ name: a.name, drafter: a })));
    const { chosen, why } = await run(auto, arms, 60, GREEDY);
    expect(why.slice(0, 6).map((w) => w.match(/\((trying \w+)/)?.[1])).toEqual([
      'trying plain',
      'trying plain',
      'trying plain',
      'trying good',
      'trying good',
      'trying good',
    ]);
    expect(chosen.get('good')).toBeGreaterThan(30);
  });

  it('remembers its estimates under greedy decoding: a new drafter starts on the arm that was best', async () => {
    // Rounds of a few milliseconds each, as a model's would be: with rounds of microseconds, a pause of the test
    // process (garbage collection, a busy CI machine) in one of good's rounds made plain decoding look 20x faster.
    const arms = () => [new Arm('plain', 0, 0, { calls: 0 }, 4), new Arm('good', 4, 3, { calls: 0 }, 4)];
    const store = new MemoryStore();
    const memory = { store, key: 'auto:test' };
    const make = (a: Arm[], m: typeof memory | null = memory) =>
      new AutoDrafter(
        a.map((x) => ({ name: x.name, drafter: x })),
        () => FLAT,
        m,
      );
    const first = arms();
    const learnt = await run(make(first), first, 24, GREEDY);
    expect(learnt.why[0]).toContain('trying plain');
    await new Promise((r) => setTimeout(r, 0)); // the save is asynchronous
    const record = (await store.get('auto:test')) as { arms: Record<string, { throughput: number }> };
    expect(record.arms.good?.throughput).toBeGreaterThan(record.arms.plain?.throughput as number);
    // A new drafter (a new session) goes straight to the best arm instead of trying each again.
    const again = arms();
    const resumed = await run(make(again), again, 4, GREEDY);
    expect(resumed.why[0]).toMatch(/^auto: good \(best: /);
    expect(resumed.chosen.get('good')).toBe(4);
    // Not under sampling (the remembered choice would make a seed's text depend on history), not without memory,
    // and not from a record that is not one.
    const sampled = arms();
    expect((await run(make(sampled), sampled, 1)).why[0]).toContain('trying plain');
    const forgetful = arms();
    expect((await run(make(forgetful, null), forgetful, 1, GREEDY)).why[0]).toContain('trying plain');
    await store.set('auto:test', { version: 1, arms: { good: { throughput: 'fast', roundCost: -1 } } });
    const garbled = arms();
    expect((await run(make(garbled), garbled, 1, GREEDY)).why[0]).toContain('trying plain');
  });
});
