import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseLlamaConfig } from '../src/model/config';
import { loadModel } from '../src/model/load';
import { parameterCount } from '../src/model/precision';
import { makeTokenizer } from '../src/model/tokenizer';
import { REAL_SHAPES, writeRealShape } from './real-shapes';
import { syntheticTokenizer } from './synthetic-tokenizer';

describe('real shapes', () => {
  it('the transcribed configs have the published parameter counts', () => {
    const millions = Object.fromEntries(
      Object.entries(REAL_SHAPES).map(([n, s]) => [n, Math.round(parameterCount(parseLlamaConfig(s.config)) / 1e6)]),
    );
    expect(millions).toEqual({
      'SmolLM2-135M': 135,
      'SmolLM2-360M': 362,
      'SmolLM2-1.7B': 1711,
      'Qwen2.5-0.5B': 494,
      'Llama-3.2-1B': 1236,
    });
  });

  it('writes a sharded folder the loader reads: exact widths, BF16 weights, a tokenizer covering the vocabulary', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'real-shape-')), 'smol');
    writeRealShape('SmolLM2-135M', dir, { layers: 1, shardBytes: 40 * 2 ** 20 });
    expect(readdirSync(dir).filter((f) => f.endsWith('.safetensors')).length).toBeGreaterThan(1);
    const model = await loadModel(dir);
    const { config } = model;
    expect([config.hiddenSize, config.intermediateSize, config.numHeads, config.numKvHeads, config.numLayers]).toEqual([
      576, 1536, 9, 3, 1,
    ]);
    expect(config.vocabSize).toBe(49152);
    expect(model.tokenizer.size).toBe(49152);
    expect(new Set([...model.weights.values()].map((t) => t.dtype))).toEqual(new Set(['BF16']));
    const ids = model.tokenizer.encode('the quick brown fox');
    expect(model.tokenizer.decode(ids)).toBe('the quick brown fox');
    expect(Math.max(...ids)).toBeLessThan(49152);
    expect(model.tokenizer.decode([0])).toBe('<|endoftext|>');
    const raw = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
    expect(raw.rope_theta).toBe(100000);
    expect(raw.tie_word_embeddings).toBe(true);
  });

  it("Qwen2.5's and Llama 3's vocabularies: regular tokens, then the specials at their published ids", () => {
    for (const name of ['Qwen2.5-0.5B', 'Llama-3.2-1B'] as const) {
      const shape = REAL_SHAPES[name];
      const cfg = parseLlamaConfig(shape.config);
      const size = cfg.vocabSize;
      const { tokenizer } = syntheticTokenizer({ size, specials: shape.specials });
      const tok = makeTokenizer(tokenizer, { tokenizer_class: shape.tokenizerClass });
      expect(tok.size).toBe(size);
      const special = shape.specials[0] as { id: number; content: string };
      expect(tok.decode([special.id])).toBe(special.content);
      expect(tok.decode(tok.encode('hello there'))).toBe('hello there');
    }
  });
});
