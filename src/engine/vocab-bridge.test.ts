/**
 * A draft model padded to another vocabulary size than the target's (same tokenizer): drafting reads it over the
 * target's vocabulary, at the bridge and through the engine.
 */
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseSafetensors, readAsFloat32, writeSafetensors } from '../model/safetensors';
import { randomModel, TINY_CONFIG } from '../model/testing/random-model';
import { ortForNode } from '../runtime/ort-node';
import { DraftDist } from './drafters/draft-model';
import { createDrafter, type Method } from './drafters/index';
import { SpecEngine } from './engine';
import type { CausalLM, ForwardInput } from './lm';
import { GREEDY, Rng, type SamplingParams } from './sampling';
import { onTargetVocabulary } from './vocab-bridge';

/** A model of `vocab` rows whose logits row r is [r*10 + 0, r*10 + 1, ...]; it records the tokens it was fed. */
function fakeLM(vocab: number): CausalLM & { fed: number[]; fingerprint: string } {
  const fed: number[] = [];
  return {
    fed,
    fingerprint: `fake-${vocab}`,
    async forwardArgmax(input: ForwardInput) {
      for (const t of Array.from(input.tokens)) if (t >= vocab) throw new RangeError(`token id ${t} out of range`);
      return Int32Array.from(Array.from(input.rows), () => vocab - 1);
    },
    length: 0,
    calls: 0,
    config: { vocabSize: vocab, maxPositions: 64, eosTokenIds: [0] },
    keep() {},
    reset() {},
    async forward(input: ForwardInput) {
      for (const t of Array.from(input.tokens)) {
        if (t >= vocab) throw new RangeError(`token id ${t} is not in [0, ${vocab})`);
        fed.push(t);
      }
      const rows = Array.from(input.rows);
      return Float32Array.from({ length: rows.length * vocab }, (_, i) => Math.floor(i / vocab) * 10 + (i % vocab));
    },
  };
}

const input = (tokens: number[]): ForwardInput => ({
  tokens,
  positions: tokens.map((_, i) => i),
  bias: new Float32Array(tokens.length * tokens.length),
  rows: tokens.map((_, i) => i),
});

describe('a draft model over the target vocabulary', () => {
  it('is the draft itself where the sizes agree', () => {
    const lm = fakeLM(6);
    expect(onTargetVocabulary(lm, 6)).toBe(lm);
  });

  it('drops the rows past the target: the target is never offered an id it has no row for', async () => {
    const lm = fakeLM(6);
    const bridged = onTargetVocabulary(lm, 4);
    expect(bridged.config.vocabSize).toBe(4);
    expect(Array.from(await bridged.forward(input([1, 2])))).toEqual([0, 1, 2, 3, 10, 11, 12, 13]);
  });

  it("keeps the draft's fingerprint (what remembered records are keyed by), and its argmax where every id is the target's", async () => {
    const fewer = onTargetVocabulary(fakeLM(3), 5) as CausalLM & { fingerprint?: string };
    expect(fewer.fingerprint).toBe('fake-3');
    expect(Array.from((await fewer.forwardArgmax?.(input([4, 1]))) ?? [])).toEqual([2, 2]);
    // More rows than the target: the argmax could be a padding id, so there is none.
    const more = onTargetVocabulary(fakeLM(6), 4) as CausalLM & { fingerprint?: string };
    expect(more.fingerprint).toBe('fake-6');
    expect(more.forwardArgmax).toBeUndefined();
  });

  it('is what createDrafter gives a custom round loop too', async () => {
    const draft = fakeLM(6);
    const target = fakeLM(4);
    const drafter = createDrafter('chain', { target, draft, costs: () => null });
    const tree = await drafter.propose({
      committed: [1, 2],
      maxNodes: 3,
      maxDepth: 3,
      sampling: GREEDY,
      rng: new Rng(1),
      eos: new Set<number>(),
    });
    // The fake's largest logit is its last row's: 5, a padding id the target has no row for.
    expect(tree.tokens.length).toBeGreaterThan(1);
    expect(Array.from(tree.tokens).every((t) => t < 4)).toBe(true);
  });

  it('gives the ids it has no row for probability zero, and reads a committed one as token 0', async () => {
    const lm = fakeLM(3);
    const bridged = onTargetVocabulary(lm, 5);
    const logits = await bridged.forward(input([2, 4]));
    expect(lm.fed).toEqual([2, 0]);
    expect(Array.from(logits.subarray(5, 8))).toEqual([10, 11, 12]);
    const row = logits.subarray(0, 5);
    const sampled = new DraftDist(row, { temperature: 1, topK: 0, topP: 1, seed: 1 });
    const p = sampled.verify as Float32Array;
    expect(p[3]).toBe(0);
    expect(p[4]).toBe(0);
    expect((p[0] as number) + (p[1] as number) + (p[2] as number)).toBeCloseTo(1, 6);
  });
});

/**
 * A tiny random model on the bundled tokenizer (4096 tokens) with `vocab` rows whose untied output rows below 4096
 * are zero: its first choice is always one of the padding rows (their random logits, the largest above zero).
 */
function paddedModel(vocab: number, seed: number, paddingWins: boolean): string {
  const dir = mkdtempSync(join(tmpdir(), `padded-${vocab}-`));
  const config = { ...TINY_CONFIG, vocab_size: vocab, tie_word_embeddings: false, max_position_embeddings: 256 };
  const bytes = randomModel(config, 'F32', seed).safetensors;
  const parsed = parseSafetensors('model.safetensors', bytes);
  const tensors = [...parsed.tensors.keys()].map((name) => {
    const data = readAsFloat32(parsed, name);
    if (paddingWins && name === 'lm_head.weight') data.fill(0, 0, 4096 * TINY_CONFIG.hidden_size);
    return {
      name,
      dtype: 'F32' as const,
      shape: parsed.tensors.get(name)?.shape ?? [],
      data: new Uint8Array(data.buffer),
    };
  });
  writeFileSync(join(dir, 'model.safetensors'), writeSafetensors(tensors));
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
  for (const f of ['tokenizer.json', 'tokenizer_config.json'])
    copyFileSync(join('public/models/austen-target', f), join(dir, f));
  return dir;
}

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function tokensOf(engine: SpecEngine, method: Method, sampling: SamplingParams): Promise<number[]> {
  const it = engine.generate('It is a truth', { method, maxNewTokens: 12, sampling });
  let step = await it.next();
  while (!step.done) step = await it.next();
  return step.value.tokens;
}

describe('a draft model padded to another vocabulary size than the target', () => {
  it('drafts only ids the target has: a draft padded past the target, whose padding rows score highest', async () => {
    const target = paddedModel(4096, 1, false);
    const draft = paddedModel(4200, 2, true);
    dirs.push(target, draft);
    const engine = await SpecEngine.load(ortForNode(), { target, draft, device: 'wasm', calibration: 'never' });
    try {
      const plain = await tokensOf(engine, 'ar', GREEDY);
      for (const method of ['chain', 'dynamic', 'merged'] as const)
        expect(await tokensOf(engine, method, GREEDY)).toEqual(plain);
      await tokensOf(engine, 'chain', { temperature: 1, topK: 0, topP: 1, seed: 3 });
    } finally {
      await engine.release();
    }
  }, 60_000);

  it('reads the target padding ids it commits: a target padded past the draft, whose padding rows score highest', async () => {
    const target = paddedModel(4200, 3, true);
    const draft = paddedModel(4096, 4, false);
    dirs.push(target, draft);
    const engine = await SpecEngine.load(ortForNode(), { target, draft, device: 'wasm', calibration: 'never' });
    try {
      const plain = await tokensOf(engine, 'ar', GREEDY);
      expect(plain.some((t) => t >= 4096)).toBe(true);
      for (const method of ['chain', 'adaptive', 'auto'] as const)
        expect(await tokensOf(engine, method, GREEDY)).toEqual(plain);
      const sampled = await tokensOf(engine, 'chain', { temperature: 1, topK: 0, topP: 1, seed: 5 });
      expect(sampled).toHaveLength(12);
    } finally {
      await engine.release();
    }
  }, 60_000);
});
