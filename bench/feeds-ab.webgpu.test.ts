/**
 * The GPU kit's in-process A/B of the GPU-buffer inputs, on WebGPU in Node (lavapipe here): it measures both
 * engines, the one with GPU buffers really made them, and it leaves the switch as it found it (a leaked switch would
 * turn the buffers off for every model loaded afterwards).
 */
import { describe, expect, it } from 'vitest';
import { nodeWebGpu, webGpuOrt, webGpuTitle } from '../src/runtime/testing/node-webgpu';
import { feedsAB } from './feeds-ab';

describe.skipIf(!nodeWebGpu.ok)(webGpuTitle('inputs in GPU buffers against CPU inputs, in one process'), () => {
  it('measures both engines on one graph and leaves the switch unset', async () => {
    const proto = (globalThis as unknown as { GPUDevice: { prototype: Record<string, unknown> } }).GPUDevice.prototype;
    const create = proto.createBuffer as (...a: unknown[]) => unknown;
    let feedBuffers = 0;
    proto.createBuffer = function (this: unknown, ...a: unknown[]) {
      if ((a[0] as GPUBufferDescriptor).label?.startsWith('feed ')) feedBuffers++;
      return create.apply(this, a);
    };
    try {
      const r = await feedsAB(webGpuOrt(), 'public/models/austen-target', 1, [1]);
      expect(['plain', 'fused', 'hybrid']).toContain(r.graph);
      expect([r.on[0]?.q, r.off[0]?.q]).toEqual([1, 1]);
      expect(r.on[0]?.ms).toBeGreaterThan(0);
      expect(r.off[0]?.ms).toBeGreaterThan(0);
      expect(feedBuffers).toBeGreaterThan(0);
      expect((globalThis as { SPEC_DECODER_GPU_FEEDS?: string }).SPEC_DECODER_GPU_FEEDS).toBeUndefined();
    } finally {
      proto.createBuffer = create;
    }
  });
});
