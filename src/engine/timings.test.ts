import { describe, expect, it } from 'vitest';
import { timingsText } from './timings';

describe('timingsText', () => {
  it('says each part of the load, and "no warm-up" when there was none', () => {
    const t = { loadMs: 1160, warmupMs: 70, calibrationMs: 0.6, calibration: 'remembered' as const };
    expect(timingsText(t)).toBe('loaded in 1.16 s, warm-up 0.070 s, costs remembered (checked in 0.001 s)');
    expect(timingsText({ ...t, startMs: 640 })).toBe(
      "loaded in 1.16 s (onnxruntime's start 0.64 s of it, beside the reading), warm-up 0.070 s, costs remembered (checked in 0.001 s)",
    );
    expect(timingsText({ ...t, warmupMs: 0, calibration: 'none' })).toBe('loaded in 1.16 s, no warm-up');
    expect(timingsText({ ...t, calibration: 'measured', calibrationMs: 820 })).toBe(
      'loaded in 1.16 s, warm-up 0.070 s, costs measured in 0.82 s',
    );
  });
});
