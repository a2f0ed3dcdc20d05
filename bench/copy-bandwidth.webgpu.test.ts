/**
 * The GPU kit's probe of Dawn's round trips and the device's copy bandwidth, on WebGPU in Node (lavapipe here): every
 * part is measured, and the bandwidth counts the bytes of all the copies in a submit.
 */
import { describe, expect, it } from 'vitest';
import { nodeWebGpu, webGpuTitle } from '../src/runtime/testing/node-webgpu';
import { roundTripLine, roundTripProbe } from './node-webgpu';

describe.skipIf(!nodeWebGpu.ok)(webGpuTitle("Dawn's round trips and copy bandwidth"), () => {
  it('measures the round trips and eight 256 MiB copies a submit', async () => {
    const r = await roundTripProbe();
    if ('error' in r) throw new Error(r.error);
    expect(r.copyAndMap.median).toBeGreaterThan(0);
    expect(r.submitDone.median).toBeGreaterThan(0);
    const bw = r.copyBandwidth;
    expect(bw?.bytes).toBe(8 * 256 * 2 ** 20);
    expect(bw?.medianGBps).toBeGreaterThan(0);
    expect(bw?.bestGBps).toBeGreaterThanOrEqual(bw?.medianGBps ?? Infinity);
    // A CPU emulation copies at memory speed, well under a terabyte a second.
    expect(bw?.bestGBps).toBeLessThan(1000);
    expect(roundTripLine(r)).toMatch(/; copy bandwidth [\d.]+ GB\/s \(median [\d.]+; 2048 MiB copied a submit\)$/);
  }, 120_000);
});
