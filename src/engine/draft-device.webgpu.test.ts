/**
 * The draft model on another device than the target (EngineLoadOptions.draftDevice), on WebGPU in Node (lavapipe
 * here): the bundled target on WebGPU, its draft on wasm. The draft really runs there, drafting still gives plain
 * greedy decoding's tokens, and the measured costs see the draft's own device (a wasm call is a small fraction of a
 * WebGPU target call). By default ('auto') the draft is timed on both devices and the faster kept: wasm here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeWebGpu, webGpuOrt, webGpuTitle } from '../runtime/testing/node-webgpu';
import { SpecEngine } from './engine';
import { GREEDY } from './sampling';
import { MemoryStore } from './store';

const TEXT = 'It is a truth universally acknowledged, that a single man';

let engine: SpecEngine;
beforeAll(async () => {
  if (!nodeWebGpu.ok) return;
  engine = await SpecEngine.load(webGpuOrt(), {
    target: 'public/models/austen-target',
    draft: 'public/models/austen-draft',
    device: 'webgpu',
    draftDevice: 'wasm',
    calibration: 'never',
  });
}, 120_000);
afterAll(async () => {
  await engine?.release();
});

async function run(method: 'ar' | 'chain') {
  const it = engine.generate(TEXT, { method, maxNewTokens: 8, sampling: GREEDY });
  let step = await it.next();
  while (!step.done) step = await it.next();
  return step.value;
}

describe.skipIf(!nodeWebGpu.ok)(webGpuTitle('the draft model on wasm next to a target on WebGPU'), () => {
  it('drafts on wasm, gives plain decoding tokens, and the costs measure each model on its device', async () => {
    expect(engine.target.device).toBe('webgpu');
    expect(engine.draft?.device).toBe('wasm');
    const plain = await run('ar');
    const chain = await run('chain');
    expect(chain.stats.draftCalls).toBeGreaterThan(0);
    expect(chain.tokens).toEqual(plain.tokens);
    const costs = await engine.calibrate([1, 2], 1);
    // On lavapipe a wasm draft call took about 1 ms against a WebGPU target call's 260-380 ms (0.13 on WebGPU).
    expect(costs.draftRelative).toBeLessThan(0.05);
  }, 120_000);

  it('by default times the draft on both devices and keeps the faster, then remembers it', async () => {
    const store = new MemoryStore();
    const load = () =>
      SpecEngine.load(webGpuOrt(), {
        target: 'public/models/austen-target',
        draft: 'public/models/austen-draft',
        device: 'webgpu',
        calibration: 'never',
        warmup: false,
        store,
      });
    const first = await load();
    try {
      expect(first.draftDevice?.how).toBe('measured');
      const [cpu, gpu] = first.draftDevice?.timings ?? [];
      expect([cpu?.device, gpu?.device]).toEqual(['wasm', 'webgpu']);
      // lavapipe: about 1 ms a call on wasm against 30-40 on WebGPU.
      expect(first.draft?.device).toBe('wasm');
      expect((cpu?.q1 as number) < (gpu?.q1 as number)).toBe(true);
    } finally {
      await first.release();
    }
    const second = await load();
    try {
      expect([second.draftDevice?.how, second.draft?.device]).toEqual(['remembered', 'wasm']);
    } finally {
      await second.release();
    }
  }, 180_000);
});
