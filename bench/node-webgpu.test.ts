import { describe, expect, it } from 'vitest';
import type { CostCurve } from '../src/engine/calibrate';
import { curveTable, parseCurveVariants, roundTripLine } from './node-webgpu';

describe('the GPU kit curve variants', () => {
  it('parses precision/graph pairs, a bare precision meaning graph auto', () => {
    expect(parseCurveVariants('fp32/plain, int4/fused,fp16')).toEqual([
      { precision: 'fp32', graph: 'plain' },
      { precision: 'int4', graph: 'fused' },
      { precision: 'fp16', graph: 'auto' },
    ]);
  });

  it('refuses an unknown precision or graph, naming the item', () => {
    expect(() => parseCurveVariants('fp8/plain')).toThrow('curve variant "fp8/plain": the precision');
    expect(() => parseCurveVariants('fp32/flash')).toThrow('curve variant "fp32/flash": the graph');
  });
});

describe('the verify-cost curve table', () => {
  const curve = (ms1: number, ms64: number): CostCurve =>
    ({
      context: 64,
      points: [
        { q: 1, ms: ms1, relative: 1 },
        { q: 64, ms: ms64, relative: ms64 / ms1 },
      ],
    }) as unknown as CostCurve;

  it('names each row by what ran, with the bandwidth of a one-token call, and an error row by what was asked', () => {
    const rows = curveTable(
      [
        {
          model: 'gpu-kit/models/smollm2-135m/',
          compute: 'fp32',
          precision: 'fp32',
          graph: 'fused',
          asked: 'fp32/fused',
          weightBytes: 538.1e6,
          curve: curve(76, 87.5),
          cpuOverWall: 0.934,
        },
        {
          model: 'gpu-kit/models/smollm2-135m',
          compute: 'fp32',
          asked: 'int4/fused',
          weightBytes: 0,
          error: 'the fused graph computes wrong results',
        },
      ],
      false,
    );
    expect(rows[0]).toContain('after 64 cached tokens');
    expect(rows[0]).toContain('Liftoff only');
    expect(rows[2]).toBe('| model | precision | graph | weights MB | GB/s at q=1 | CPU/wall | q=1 | q=64 |');
    // 538.1 MB read in 76 ms: 7.1 GB/s.
    expect(rows[4]).toBe('| smollm2-135m | fp32 | fused | 538.1 | 7.1 | 0.93 | 76.00 (1.00x) | 87.50 (1.15x) |');
    expect(rows[5]).toBe(
      '| smollm2-135m | int4 | fused | 0.0 | - | - | error: the fused graph computes wrong results |  |',
    );
  });
});

describe("Dawn's round-trip line", () => {
  it('gives the medians with their minima, or the error', () => {
    expect(roundTripLine({ copyAndMap: { min: 0.05, median: 0.061 }, submitDone: { min: 0.01, median: 0.0204 } })).toBe(
      'a 256-byte copy and mapAsync 0.061 ms (min 0.050); an empty submit and onSubmittedWorkDone 0.020 ms (min 0.010)',
    );
    expect(
      roundTripLine({
        copyAndMap: { min: 0.05, median: 0.061 },
        submitDone: { min: 0.01, median: 0.0204 },
        copyBandwidth: { bytes: 8 * 2 ** 28, bestGBps: 1234.56, medianGBps: 1100.04 },
      }),
    ).toBe(
      'a 256-byte copy and mapAsync 0.061 ms (min 0.050); an empty submit and onSubmittedWorkDone 0.020 ms (min 0.010); copy bandwidth 1234.6 GB/s (median 1100.0; 2048 MiB copied a submit)',
    );
    expect(roundTripLine({ error: 'no adapter' })).toBe('error: no adapter');
    expect(roundTripLine(undefined)).toBe('not measured');
  });
});
