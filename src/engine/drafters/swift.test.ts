import { describe, expect, it } from 'vitest';
import { generateAll } from '../generate';
import { MASKED } from '../lm';
import { GREEDY } from '../sampling';
import { MemoryStore } from '../store';
import { SEARCH_DEFAULTS, SkipSearch } from '../swift/search';
import { hashedLogits, SkippingToyLM } from '../testing/toy-lm';
import { NoDrafter } from './none';
import { SWIFT_DEFAULTS, SwiftDrafter, siblingsFor, teacherForcedBias } from './swift';

const tokenizer = { decode: (ids: readonly number[]) => ids.map((i) => String.fromCharCode(97 + (i % 26))).join('') };
/** 8 layers; switches 0..7 attention, 8..15 MLP. Middle sub-layers matter little, a few matter a lot. */
const IMPORTANCE = [0, 0.05, 1.5, 0.05, 1.2, 0.05, 0.05, 0, 0, 0.05, 0.05, 1.4, 0.05, 0.05, 1.1, 0];
const model = (seed = 3) => new SkippingToyLM(40, hashedLogits(40, seed, 2, 4), 8, IMPORTANCE);

describe('SWIFT layer-set search', () => {
  it('starts from the uniform set and never skips the first or last layer', () => {
    const search = new SkipSearch({ layers: 8, ratio: 0.5, ...SEARCH_DEFAULTS });
    expect(Array.from(search.best)).toEqual([0, 1, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0, 1, 0, 0]);
    for (let i = 0; i < 60; i++) {
      const z = search.candidate();
      expect(z[0]).toBe(0);
      expect(z[7]).toBe(0);
      expect(z[8]).toBe(0);
      expect(z[15]).toBe(0);
      expect(z.reduce((a, b) => a + b, 0)).toBe(search.count);
      search.record(z, Math.random());
    }
  });

  it('is deterministic for a fixed seed, random search and Bayesian steps alike', () => {
    const run = (seed: number) => {
      const s = new SkipSearch({ layers: 8, ratio: 0.5, ...SEARCH_DEFAULTS, beta: 5, seed });
      const seen: string[] = [];
      for (let i = 0; i < 30; i++) {
        const z = s.candidate();
        seen.push(z.join(''));
        s.record(z, 1 - IMPORTANCE.reduce((a, w, k) => a + w * (z[k] as number), 0) / 10);
      }
      return seen;
    };
    expect(run(4)).toEqual(run(4));
    expect(run(4)).not.toEqual(run(5));
  });

  it('finds a better set than the uniform start, ends at the target matchness, and says which layers run', () => {
    const s = new SkipSearch({ layers: 8, ratio: 0.5, ...SEARCH_DEFAULTS, beta: 5, enough: 0.999 });
    const score = (z: Uint8Array) => 1 - IMPORTANCE.reduce((a, w, k) => a + w * (z[k] as number), 0) / 10;
    const uniform = score(SkipSearch.uniform(8));
    for (let i = 0; i < 200 && s.phase === 'optimising'; i++) {
      const z = s.candidate();
      s.record(z, score(z));
    }
    expect(s.bestScore).toBeGreaterThan(uniform);
    expect(s.bestScore).toBeGreaterThan(0.95); // only the cheap sub-layers skipped
    expect(SkipSearch.describe(s.best, 8)).toMatch(/^attn 0 .* \| mlp 0 .*7$/);
  });

  it('weighs each step by its cost: a costly step uses up patience and the step limit sooner', () => {
    const steps = (weight: number) => {
      const s = new SkipSearch({ layers: 8, ratio: 0.5, ...SEARCH_DEFAULTS, patience: 40, maxSteps: 1000 });
      s.record(s.candidate(), 0.5); // the best there will be
      let n = 1;
      while (s.phase === 'optimising') {
        s.record(s.candidate(), 0.1, weight);
        n++;
      }
      return { n, resumed: s.toRecord('m').spent };
    };
    expect(steps(1).n).toBe(41);
    expect(steps(4).n).toBe(11); // 10 steps of weight 4 reach patience 40
    expect(steps(0.3).n).toBe(41); // cheaper than a target call still counts as one
    expect(steps(4).resumed).toBe(41);
  });

  it('resumes from a remembered record and ignores a stale or mismatched one', () => {
    const a = new SkipSearch({ layers: 8, ratio: 0.5, ...SEARCH_DEFAULTS });
    const z = a.candidate();
    a.record(z, 0.9);
    const record = a.toRecord('model-x');
    const b = new SkipSearch({ layers: 8, ratio: 0.5, ...SEARCH_DEFAULTS });
    expect(b.restore(record, 'model-x')).toBe(true);
    expect(Array.from(b.best)).toEqual(Array.from(z));
    for (const bad of [
      { ...record, fingerprint: 'model-y' },
      { ...record, ratio: 0.3 },
      { ...record, best: record.best.slice(1) },
      { ...record, best: record.best.map((v, i) => (i === 0 ? 1 : v)) },
      { ...record, bestScore: 7 },
      { ...record, version: 2 },
      null,
      'garbage',
    ]) {
      expect(new SkipSearch({ layers: 8, ratio: 0.5, ...SEARCH_DEFAULTS }).restore(bad, 'model-x')).toBe(false);
    }
  });
});

describe('SWIFT drafting', () => {
  it('teacher-forced rows see the prefix and their own earlier rows, never the cached copies of themselves', () => {
    const bias = teacherForcedBias(10, 6, 4);
    const width = 14;
    for (let i = 0; i < 4; i++) {
      for (let j = 0; j < width; j++) {
        const visible = j < 6 || (j >= 10 && j - 10 <= i);
        expect(bias[i * width + j]).toBe(visible ? 0 : MASKED);
      }
    }
  });

  it('the top-k buckets follow the confidence (the paper under sampling, the reference code under greedy)', () => {
    expect([0.99, 0.9, 0.6, 0.3].map((p) => siblingsFor(p, false))).toEqual([1, 3, 5, 10]);
    expect([0.99, 0.9, 0.6, 0.3].map((p) => siblingsFor(p, true))).toEqual([3, 5, 8, 10]);
  });

  it('optimises on the context, then accelerates; gives plain greedy decoding; remembers the set per model', async () => {
    const target = model();
    const options = { ...SWIFT_DEFAULTS, search: { ...SEARCH_DEFAULTS, gamma: 8, beta: 4, maxSteps: 12 } };
    const store = new MemoryStore();
    const drafter = new SwiftDrafter(target, () => null, store, options);
    const plain = await generateAll({ target, drafter: new NoDrafter(), tokenizer }, [2, 9, 4], {
      maxNewTokens: 80,
      sampling: GREEDY,
    });
    const notes: string[] = [];
    const r = await generateAll(
      { target, drafter, tokenizer },
      [2, 9, 4],
      { maxNewTokens: 80, sampling: GREEDY },
      (e) => notes.push(e.note?.text ?? ''),
    );
    expect(r.tokens).toEqual(plain.tokens);
    expect(drafter.matchness.length).toBeGreaterThan(3);
    // Teacher-forced matchness is measured against what the target really generated: a good set matches most.
    expect(Math.max(...drafter.matchness)).toBeGreaterThan(0.6);
    expect(drafter.phase).toBe('accelerating');
    expect(notes.some((n) => n.startsWith('swift: optimising'))).toBe(true);
    expect(notes[notes.length - 1]).toMatch(/^swift: accelerating.*runs attn 0 /);
    expect(r.stats.tau).toBeGreaterThan(1.3);
    // A new drafter for the same model and store starts where the search ended.
    const again = new SwiftDrafter(target, () => null, store, options);
    await generateAll({ target, drafter: again, tokenizer }, [2, 9, 4], { maxNewTokens: 4, sampling: GREEDY });
    expect(again.phase).toBe('accelerating');
    expect(Array.from(again.skipSet)).toEqual(Array.from(drafter.skipSet));
    // Another model (another fingerprint) does not take it.
    const otherModel = new SkippingToyLM(
      40,
      hashedLogits(40, 3, 2, 4),
      8,
      IMPORTANCE.map((w) => w * 2),
    );
    const fresh = new SwiftDrafter(otherModel, () => null, store, options);
    await generateAll({ target: otherModel, drafter: fresh, tokenizer }, [2, 9, 4], {
      maxNewTokens: 4,
      sampling: GREEDY,
    });
    expect(fresh.phase).toBe('optimising');
    // A sampled generation's fresh search starts its record anew (it grew by every sampled generation's steps).
    const steps = [...drafter.matchness];
    drafter.reset(true);
    expect(drafter.matchness).toEqual(steps);
    drafter.reset(false);
    expect(drafter.matchness).toEqual([]);
  });

  it('under sampling a seed gives the same text whatever ran before: a sampled generation searches afresh, unsaved', async () => {
    const target = model();
    const options = { ...SWIFT_DEFAULTS, search: { ...SEARCH_DEFAULTS, gamma: 8, beta: 4, maxSteps: 12 } };
    const store = new MemoryStore();
    const drafter = new SwiftDrafter(target, () => null, store, options);
    const sampled = { temperature: 0.9, topK: 20, topP: 1, seed: 5 };
    const run = async (sampling: typeof sampled, maxNewTokens = 40) =>
      (await generateAll({ target, drafter, tokenizer }, [2, 9, 4], { maxNewTokens, sampling })).tokens;
    const first = await run(sampled);
    expect(await store.get(`swift:${target.fingerprint}`)).toBeUndefined();
    for (const before of [sampled, GREEDY, sampled, GREEDY]) {
      await run(before, 60);
      expect(await run(sampled)).toEqual(first);
    }
    // The greedy generations' search went on, and was remembered.
    expect(drafter.searchProgress.steps).toBeGreaterThan(0);
    await run(GREEDY, 1);
    expect(drafter.searchProgress.steps).toBeGreaterThan(0);
    expect(await store.get(`swift:${target.fingerprint}`)).toBeDefined();
  });

  it('remembers every search step, so short sessions add up to one search (a CLI run is one short generation)', async () => {
    const target = model();
    const options = {
      ...SWIFT_DEFAULTS,
      search: { ...SEARCH_DEFAULTS, gamma: 8, beta: 4, maxSteps: 40, patience: 14 },
    };
    const store = new MemoryStore();
    const sessions: { steps: number; spent: number; stale: number }[] = [];
    let phase = 'optimising';
    for (let s = 0; s < 8 && phase === 'optimising'; s++) {
      const drafter = new SwiftDrafter(target, () => null, store, options);
      await generateAll({ target, drafter, tokenizer }, [2, 9, 4, 7, 1, 3, 8, 5, 6, 2], {
        maxNewTokens: 12,
        sampling: GREEDY,
      });
      sessions.push(drafter.searchProgress);
      phase = drafter.phase;
      // The next session resumes exactly where this one stopped, whether its last steps improved the best or not.
      const next = new SwiftDrafter(target, () => null, store, options);
      await generateAll({ target, drafter: next, tokenizer }, [2], { maxNewTokens: 1, sampling: GREEDY });
      expect(next.searchProgress).toEqual(drafter.searchProgress);
    }
    // Each session adds steps, and the search ends (patience or step limit) within a few sessions.
    for (let s = 1; s < sessions.length; s++)
      expect(sessions[s]?.steps).toBeGreaterThan(sessions[s - 1]?.steps as number);
    expect(phase).toBe('accelerating');
  });
});
