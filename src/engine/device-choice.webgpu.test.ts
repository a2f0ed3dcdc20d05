/**
 * The draft model on another device than the target (EngineLoadOptions.draftDevice), on WebGPU in Node (lavapipe
 * here): the bundled target on WebGPU, its draft on wasm. The draft really runs there, drafting still gives plain
 * greedy decoding's tokens. By default ('auto') the draft is timed on both devices and the faster kept (wasm here),
 * then remembered; the EAGLE head likewise.
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

async function run(method: 'ar' | 'chain' | 'eagle', on: SpecEngine = engine) {
  const it = on.generate(TEXT, { method, maxNewTokens: 8, sampling: GREEDY });
  let step = await it.next();
  while (!step.done) step = await it.next();
  return step.value;
}

describe.skipIf(!nodeWebGpu.ok)(webGpuTitle('the draft model on wasm next to a target on WebGPU'), () => {
  it('drafts on wasm and gives plain decoding tokens', async () => {
    expect(engine.target.device).toBe('webgpu');
    expect(engine.draft?.device).toBe('wasm');
    const plain = await run('ar');
    const chain = await run('chain');
    expect(chain.stats.draftCalls).toBeGreaterThan(0);
    expect(chain.tokens).toEqual(plain.tokens);
    expect(engine.draftDevice).toEqual({ device: 'wasm', timings: [], how: 'asked' });
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
      // The build kept is the one timed faster (lavapipe: about 1 ms a call on wasm against 30-40 on WebGPU).
      const faster = (cpu?.q1 ?? 0) + (cpu?.q4 ?? 0) <= (gpu?.q1 ?? 0) + (gpu?.q4 ?? 0) ? 'wasm' : 'webgpu';
      expect(first.draft?.device).toBe(faster);
      expect(first.draftDevice?.device).toBe(faster);
    } finally {
      await first.release();
    }
    const second = await load();
    try {
      expect([second.draftDevice?.how, second.draft?.device]).toEqual(['remembered', first.draftDevice?.device]);
    } finally {
      await second.release();
    }
  }, 180_000);

  it('times the EAGLE head on both devices too, keeps the faster, and eagle still gives plain decoding tokens', async () => {
    const headed = await SpecEngine.load(webGpuOrt(), {
      target: 'public/models/austen-target',
      heads: 'public/models/austen-eagle3',
      device: 'webgpu',
      calibration: 'never',
      store: new MemoryStore(),
    });
    try {
      const choice = headed.headsDevice;
      expect(choice?.how).toBe('measured');
      const [cpu, gpu] = choice?.timings ?? [];
      expect([cpu?.device, gpu?.device]).toEqual(['wasm', 'webgpu']);
      const faster = (cpu?.q1 ?? 0) + (cpu?.q4 ?? 0) <= (gpu?.q1 ?? 0) + (gpu?.q4 ?? 0) ? 'wasm' : 'webgpu';
      expect(choice?.device).toBe(faster);
      const plain = await run('ar', headed);
      const eagle = await run('eagle', headed);
      expect(eagle.stats.draftCalls).toBeGreaterThan(0);
      expect(eagle.tokens).toEqual(plain.tokens);
    } finally {
      await headed.release();
    }
  }, 180_000);
});
