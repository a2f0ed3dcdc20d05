/**
 * The draft model's device next to a WebGPU target: timed on both and the faster kept (the slower released), the
 * choice remembered in the store and in the process, and a device asked for built alone. Fake runners whose calls
 * take a set time stand in for the two builds.
 */
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../engine/store';
import { choiceKey, openDraftOn } from './device-choice';
import type { LoadedModel } from './load';
import type { Device } from './precision';
import type { ModelRunner } from './runner';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function fakes(msPerCall: Record<Device, number>, failOn?: Device) {
  const built: Device[] = [];
  const released: Device[] = [];
  const build = async (device: Device) => {
    if (device === failOn) throw new Error(`no ${device} here`);
    built.push(device);
    return {
      device,
      model: { config: { vocabSize: 100, maxPositions: 64 } },
      config: { vocabSize: 100, maxPositions: 64 },
      reset() {},
      keep() {},
      async forward() {
        await sleep(msPerCall[device]);
        return new Float32Array(0);
      },
      async release() {
        released.push(device);
      },
    } as unknown as ModelRunner;
  };
  return { build, built, released };
}

const model = (spec: string) =>
  ({ spec, weightBytes: 1000, config: { hiddenSize: 8, numLayers: 1, vocabSize: 100 } }) as unknown as LoadedModel;

describe('where the draft model runs next to a WebGPU target', () => {
  it('times both devices, keeps the faster, releases the other, and remembers the choice', async () => {
    const store = new MemoryStore();
    const a = fakes({ wasm: 1, webgpu: 6 });
    const first = await openDraftOn(model('m1'), 'webgpu', 'auto', a.build, 'v', store);
    expect(first.runner.device).toBe('wasm');
    expect(first.choice.how).toBe('measured');
    expect(first.choice.timings.map((t) => t.device)).toEqual(['wasm', 'webgpu']);
    expect(first.choice.timings[0]?.q1).toBeLessThan(first.choice.timings[1]?.q1 as number);
    expect(a.released).toEqual(['webgpu']);
    // Remembered: built once, on the chosen device.
    const b = fakes({ wasm: 1, webgpu: 6 });
    const again = await openDraftOn(model('m1'), 'webgpu', 'auto', b.build, 'v', store);
    expect([again.runner.device, again.choice.how, b.built]).toEqual(['wasm', 'remembered', ['wasm']]);
    // A remembered record without its timings (edited, cut short) is timed again, not read and thrown on.
    await store.set(choiceKey('draft', model('m3'), 'v'), { device: 'webgpu' });
    const d = fakes({ wasm: 1, webgpu: 6 });
    const timedAgain = await openDraftOn(model('m3'), 'webgpu', 'auto', d.build, 'v', store);
    expect([timedAgain.choice.how, timedAgain.runner.device]).toEqual(['measured', 'wasm']);
    // A faster GPU keeps the GPU's build.
    const c = fakes({ wasm: 6, webgpu: 1 });
    const gpu = await openDraftOn(model('m2'), 'webgpu', 'auto', c.build, 'v', new MemoryStore());
    expect([gpu.runner.device, c.released]).toEqual(['webgpu', ['wasm']]);
  });

  it('keeps the other device where one fails to build, without remembering that', async () => {
    const store = new MemoryStore();
    const noCpu = fakes({ wasm: 1, webgpu: 6 }, 'wasm');
    const a = await openDraftOn(model('m4'), 'webgpu', 'auto', noCpu.build, 'v', store);
    expect([a.runner.device, a.choice.how, noCpu.built]).toEqual(['webgpu', 'fallback', ['webgpu']]);
    const noGpu = fakes({ wasm: 6, webgpu: 1 }, 'webgpu');
    const b = await openDraftOn(model('m4'), 'webgpu', 'auto', noGpu.build, 'v', store);
    expect([b.runner.device, b.choice.how, b.choice.timings.length, noGpu.released]).toEqual([
      'wasm',
      'fallback',
      1,
      [],
    ]);
    // Nothing was remembered: the next load measures both.
    const both = fakes({ wasm: 1, webgpu: 6 });
    expect((await openDraftOn(model('m4'), 'webgpu', 'auto', both.build, 'v', store)).choice.how).toBe('measured');
  });

  it('builds once where the device is asked for, and on wasm next to a wasm target', async () => {
    const a = fakes({ wasm: 1, webgpu: 1 });
    expect((await openDraftOn(model('m3'), 'webgpu', 'wasm', a.build, 'v')).choice).toEqual({
      device: 'wasm',
      timings: [],
      how: 'asked',
    });
    // Beside a wasm target there is nothing to choose, and the choice says so (not "asked").
    expect((await openDraftOn(model('m3'), 'wasm', 'auto', a.build, 'v')).choice).toEqual({
      device: 'wasm',
      timings: [],
      how: 'target',
    });
    // Asked for WebGPU beside a wasm target: on wasm all the same (SpecEngine.load as the CLI and the element).
    expect((await openDraftOn(model('m3'), 'wasm', 'webgpu', a.build, 'v')).choice).toEqual({
      device: 'wasm',
      timings: [],
      how: 'target',
    });
    expect(a.built).toEqual(['wasm', 'wasm', 'wasm']);
  });
});
