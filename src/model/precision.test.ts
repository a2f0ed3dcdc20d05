import { describe, expect, it } from 'vitest';
import { ortForNode } from '../runtime/ort-node';
import type { LlamaConfig } from './config';
import { AUTO_INT4_BYTES, AUTO_INT8_WASM_BYTES, parameterCount, precisionLabel, resolvePrecision } from './precision';
import { ModelRunner } from './runner';
import { randomModel } from './testing/random-model';

/** A config with `params` parameters' worth of layers (only its size matters here). */
function sized(base: LlamaConfig, params: number): LlamaConfig {
  const perLayer = parameterCount({ ...base, numLayers: 1 }) - parameterCount({ ...base, numLayers: 0 });
  return { ...base, numLayers: Math.ceil(params / perLayer) };
}

describe('precision', () => {
  const { model } = randomModel();
  const cfg = model.config;

  it('int8: fp32 compute on wasm; refused on WebGPU with the reason', () => {
    expect(resolvePrecision('int8', cfg, 'fp32', 'wasm')).toEqual({ weights: 'int8', compute: 'fp32' });
    expect(precisionLabel({ weights: 'int8', compute: 'fp32' })).toBe('int8');
    expect(() => resolvePrecision('int8', cfg, 'fp16', 'webgpu')).toThrow(/int8 runs on wasm only.*use int4/);
  });

  it('auto: on wasm fp32 for small models, int8 past 256 MiB of fp32 weights, int4 past 2 GiB of int8; on WebGPU float while it fits, then int4', () => {
    expect(resolvePrecision('auto', cfg, 'fp32', 'wasm')).toEqual({ weights: 'float', compute: 'fp32' });
    const mid = sized(cfg, AUTO_INT8_WASM_BYTES / 4 + 1e6); // SmolLM2-135M-sized
    expect(resolvePrecision('auto', mid, 'fp32', 'wasm')).toEqual({ weights: 'int8', compute: 'fp32' });
    expect(resolvePrecision('auto', mid, 'fp32', 'webgpu')).toEqual({ weights: 'float', compute: 'fp32' });
    const big = sized(cfg, AUTO_INT4_BYTES / 4 + 1e6); // over the line in fp32, far under it in int8
    expect(resolvePrecision('auto', big, 'fp32', 'wasm')).toEqual({ weights: 'int8', compute: 'fp32' });
    expect(resolvePrecision('auto', big, 'fp32', 'webgpu')).toEqual({ weights: 'int4', compute: 'fp32' });
    expect(resolvePrecision('auto', big, 'fp16', 'webgpu').weights).toBe('float'); // fits in fp16
    const huge = sized(cfg, AUTO_INT4_BYTES + 1e6); // over the line even in int8
    expect(resolvePrecision('auto', huge, 'fp32', 'wasm')).toEqual({ weights: 'int4', compute: 'fp32' });
  });

  it('a runner asked for int8 on WebGPU fails at load with a one-line error naming the model', async () => {
    await expect(ModelRunner.create(ortForNode(), model, { device: 'webgpu', precision: 'int8' })).rejects.toThrow(
      new RegExp(`^${model.spec.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: precision int8 runs on wasm only`),
    );
  });

  for (const precision of ['int4', 'int8'] as const) {
    it(`reports ${precision} quantisation progress up to 100%`, async () => {
      const seen: number[] = [];
      const runner = await ModelRunner.create(ortForNode(), randomModel({}, 'F16').model, {
        device: 'wasm',
        precision,
        onProgress: (p) => {
          if (p.file === `${precision} quantisation`) seen.push(p.progress ?? -1);
        },
      });
      expect(seen.length).toBeGreaterThan(1);
      expect(seen).toEqual([...seen].sort((a, b) => a - b));
      expect(seen[seen.length - 1]).toBe(100);
      await runner.release();
    });
  }
});
