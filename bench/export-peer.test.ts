/**
 * transformers.js, an independent implementation of generation (its own loop, cache handling and argmax), run on
 * the very same target weights exported by our builder: its greedy tokens must equal ours.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SpecEngine } from '../src/engine/engine';
import { GREEDY } from '../src/engine/sampling';
import { ortForNode } from '../src/runtime/ort-node';
import { exportForTransformers } from './export-peer';

describe('peer: transformers.js generate() on our export of the bundled target', () => {
  for (const [label, options] of [
    ['fp32, plain graph', { weights: 'float', variant: 'plain' }],
    ['int4, fused graph', { weights: 'int4', variant: 'fused' }],
  ] as const) {
    it(`gives the same greedy tokens as our plain and speculative decoding (${label})`, async () => {
      const dir = `${mkdtempSync(`${tmpdir()}/peer-`)}/austen-target`;
      await exportForTransformers('public/models/austen-target', dir, options);
      const { AutoModelForCausalLM, AutoTokenizer, env } = await import('@huggingface/transformers');
      env.allowRemoteModels = false;
      env.localModelPath = `${dirname(dir)}/`;
      const name = basename(dir);
      const tokenizer = await AutoTokenizer.from_pretrained(name);
      const model = await AutoModelForCausalLM.from_pretrained(name, { dtype: 'fp32', device: 'cpu' });
      const engine = await SpecEngine.load(ortForNode(), {
        target: 'public/models/austen-target',
        draft: 'public/models/austen-draft',
        device: 'wasm',
        precision: options.weights === 'int4' ? 'int4' : 'fp32',
      });
      for (const prompt of ['It is a truth universally acknowledged, that', 'Mr. Darcy looked at her and']) {
        const inputs = tokenizer(prompt);
        const out = (await model.generate({ ...inputs, max_new_tokens: 24, do_sample: false })) as {
          tolist(): bigint[][];
        };
        const theirs = out.tolist()[0]?.slice(engine.encode(prompt).length).map(Number);
        for (const method of ['ar', 'dynamic'] as const) {
          const it = engine.generate(prompt, { method, maxNewTokens: 24, sampling: GREEDY, stopAtEos: false });
          let step = await it.next();
          while (!step.done) step = await it.next();
          expect(step.value.tokens, `${method}: ${prompt}`).toEqual(theirs);
        }
      }
      await engine.release();
      await model.dispose();
    });
  }
});
