/**
 * Greedy identity on the bundled pair (wasm EP in Node): for every method, the generated tokens equal plain
 * greedy decoding of the target, on 20 held-out prompts x 64 tokens. A divergence is reported with the target's
 * top-2 logit gap at that position, so a near-tie flip (tree call vs plain call rounding) is named as such.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ortForNode } from '../runtime/ort-node';
import { METHOD_NAMES, type Method } from './drafters/index';
import { SpecEngine } from './engine';
import { GREEDY } from './sampling';
import { chainBias } from './tree';

const PROMPTS = readFileSync('tools/data/heldout_prompts.txt', 'utf8')
  .split('\n')
  .map((l) => l.trim())
  .filter(Boolean)
  .slice(0, 20);
const TOKENS = 64;

/** The heads trained on the bundled target, by the methods that run on them (one heads folder per engine). */
const HEADS: Partial<Record<Method, string>> = {
  eagle: 'public/models/austen-eagle3',
  medusa: 'public/models/austen-medusa',
};

let engine: SpecEngine;
const withHeads = new Map<string, SpecEngine>();
const plain = new Map<number, number[]>();

const load = (heads?: string) =>
  SpecEngine.load(ortForNode(), {
    target: 'public/models/austen-target',
    draft: 'public/models/austen-draft',
    device: 'wasm',
    // With layer switches the target also drafts for itself (swift); all switches on is the plain target exactly.
    layerSwitches: true,
    ...(heads ? { heads } : {}),
  });

beforeAll(async () => {
  engine = await load();
});
afterAll(async () => {
  await engine?.release();
  for (const e of withHeads.values()) await e.release();
});

/** The engine a method runs on: the plain one, or one loaded with that method's heads (the target then also returns hidden states). */
async function engineFor(method: Method): Promise<SpecEngine> {
  const heads = HEADS[method];
  if (!heads) return engine;
  let e = withHeads.get(heads);
  if (!e) {
    e = await load(heads);
    withHeads.set(heads, e);
  }
  return e;
}

async function run(method: Method, prompt: string): Promise<number[]> {
  const it = (await engineFor(method)).generate(prompt, {
    method,
    maxNewTokens: TOKENS,
    sampling: GREEDY,
    stopAtEos: false,
  });
  let step = await it.next();
  while (!step.done) step = await it.next();
  return step.value.tokens;
}

/** The target's top-2 logit gap after prompt + tokens[0..k) (a plain, single-sequence call). */
async function gapAt(prompt: string, tokens: number[], k: number): Promise<string> {
  const seq = [...engine.encode(prompt), ...tokens.slice(0, k)];
  engine.target.reset();
  const logits = await engine.target.forward({
    tokens: seq,
    positions: seq.map((_, i) => i),
    bias: chainBias(0, seq.length),
    rows: [seq.length - 1],
  });
  const sorted = Array.from(logits.keys()).sort((a, b) => (logits[b] as number) - (logits[a] as number));
  const [a, b] = sorted as [number, number];
  const gap = (logits[a] as number) - (logits[b] as number);
  return `top-2 logit gap at token ${k}: ${gap.toExponential(2)} (tokens ${a} vs ${b})${gap < 1e-3 ? ' — a NEAR-TIE flip' : ''}`;
}

describe('greedy identity on the bundled pair (wasm in Node, 20 held-out prompts x 64 tokens)', () => {
  it('plain decoding of each prompt', async () => {
    for (let i = 0; i < PROMPTS.length; i++) plain.set(i, await run('ar', PROMPTS[i] as string));
    expect(plain.size).toBe(20);
  });

  for (const method of METHOD_NAMES.filter((m) => m !== 'ar')) {
    it(`${method} gives plain greedy decoding token for token`, async () => {
      expect(
        (await engineFor(method)).methods().map((m) => m.name),
        'the bundled models run every registered method',
      ).toContain(method);
      for (let i = 0; i < PROMPTS.length; i++) {
        const prompt = PROMPTS[i] as string;
        const ref = plain.get(i) as number[];
        const got = await run(method, prompt);
        const k = got.findIndex((t, j) => t !== ref[j]);
        if (k >= 0)
          expect.fail(
            `${method}, prompt ${i}: token ${k} is ${got[k]}, plain decoding gives ${ref[k]}; ${await gapAt(prompt, ref, k)}`,
          );
        expect(got).toEqual(ref);
      }
    });
  }
});
