import { describe, expect, it } from 'vitest';
import { realShapesPartial } from './real-shapes-core';

const DEFAULTS = {
  shapes: { default: 'SmolLM2-135M' },
  models: { default: '' },
  backends: { default: 'node-wasm' },
  precisions: { default: 'fp32,int8,int4' },
  graphs: { default: 'plain,fused' },
  qs: { default: '1,2,4,8,16,32,64' },
  reps: { default: '3' },
  tokens: { default: '32' },
  repeats: { default: '2' },
  layers: {},
};
const full = Object.fromEntries(Object.entries(DEFAULTS).map(([k, v]) => [k, 'default' in v ? v.default : undefined]));

describe('npm run bench:real-shapes: which runs may replace the full results', () => {
  it('the default run, and runs that only add models, backends or the peer, are full', () => {
    expect(realShapesPartial(full, DEFAULTS)).toBe(false);
    expect(
      realShapesPartial(
        { ...full, models: 'public/models/austen-target', backends: 'node-wasm,node-webgpu', peer: true },
        DEFAULTS,
      ),
    ).toBe(false);
  });

  it("runs that measure less are partial (they once overwrote the same day's full results and the latest tables)", () => {
    for (const cut of [
      { precisions: 'fp32,int8' },
      { graphs: 'plain' },
      { qs: '1,4' },
      { reps: '1' },
      { tokens: '16' },
      { repeats: '1' },
      { layers: '2' },
      { shapes: '' },
      { shapes: 'SmolLM2-360M' },
      // the default backend left out: --backends chromium-wasm replaced the README's node-wasm table
      { backends: 'chromium-wasm' },
    ])
      expect(realShapesPartial({ ...full, ...cut }, DEFAULTS)).toBe(true);
  });
});
