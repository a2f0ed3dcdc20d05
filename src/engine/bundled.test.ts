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

let engine: SpecEngine;
const plain = new Map<number, number[]>();

beforeAll(async () => {
  engine = await SpecEngine.load(ortForNode(), {
    target: 'public/models/austen-target',
    draft: 'public/models/austen-draft',
    device: 'wasm',
    // With layer switches the target also drafts for itself (swift); all switches on is the plain target exactly.
    layerSwitches: true,
  });
});
afterAll(async () => {
  await engine?.release();
});

async function run(method: Method, prompt: string): Promise<number[]> {
  const it = engine.generate(prompt, { method, maxNewTokens: TOKENS, sampling: GREEDY, stopAtEos: false });
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
        engine.methods().map((m) => m.name),
        'the bundled pair runs every registered method',
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
