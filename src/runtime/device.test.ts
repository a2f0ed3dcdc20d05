import { describe, expect, it } from 'vitest';
import { chooseDevice } from './device';
import type { AdapterReport, WebGpuProbe } from './webgpu';

const adapter = (over: Partial<AdapterReport>): WebGpuProbe => ({
  ok: true,
  adapter: {
    vendor: 'nvidia',
    architecture: 'ampere',
    description: '',
    isFallbackAdapter: false,
    features: [],
    shaderF16: true,
    maxBufferSize: 1 << 30,
    maxStorageBufferBindingSize: 1 << 30,
    ...over,
  },
});
const hardware = adapter({});
const swiftshader = adapter({ vendor: 'google', architecture: 'swiftshader', shaderF16: false });
const fallback = adapter({ vendor: 'acme', architecture: 'gpu', isFallbackAdapter: true });
const none: WebGpuProbe = { ok: false, reason: 'no WebGPU adapter: navigator.gpu is missing' };

describe('chooseDevice', () => {
  it('refuses a device that is not one (anything else used to mean WebGPU)', () => {
    for (const asked of ['gpu', 'WASM', ''])
      expect(() => chooseDevice(asked as never, hardware)).toThrow(
        `device "${asked}" is not one of auto, wasm, webgpu`,
      );
  });

  it('auto takes a hardware adapter', () => {
    expect(chooseDevice('auto', hardware)).toMatchObject({ device: 'webgpu', calibration: 'auto', warmup: true });
    expect(chooseDevice('auto', hardware).fallback).toBeUndefined();
    expect(chooseDevice('auto', hardware).warning).toBeUndefined();
  });

  it('auto runs on wasm on a software or fallback adapter, and says why', () => {
    for (const probe of [swiftshader, fallback]) {
      const d = chooseDevice('auto', probe);
      expect(d.device).toBe('wasm');
      expect(d.fallback).toMatch(/software WebGPU adapter .*device="webgpu"/);
      expect(d.calibration).toBe('auto');
      expect(d.warmup).toBe(true);
    }
  });

  it('an explicit webgpu keeps a software adapter, with a warning, no self-timing and no warm-up', () => {
    const d = chooseDevice('webgpu', swiftshader);
    expect(d).toMatchObject({ device: 'webgpu', calibration: 'never', warmup: false });
    expect(d.warning).toMatch(/software WebGPU adapter.*slower/);
    expect(chooseDevice('webgpu', hardware)).toMatchObject({ device: 'webgpu', calibration: 'auto', warmup: true });
    expect(chooseDevice('wasm', null)).toMatchObject({ device: 'wasm', calibration: 'auto', warmup: true });
  });

  it('without an adapter, auto and webgpu fall back to wasm with the probe reason; wasm is wasm', () => {
    for (const req of ['auto', 'webgpu'] as const) {
      expect(chooseDevice(req, none)).toMatchObject({
        device: 'wasm',
        fallback: expect.stringContaining('no WebGPU adapter'),
      });
    }
    expect(chooseDevice('wasm', null)).toEqual({ device: 'wasm', calibration: 'auto', warmup: true });
  });
});
