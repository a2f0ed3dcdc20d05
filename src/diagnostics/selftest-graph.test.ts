import { describe, expect, it } from 'vitest';
import { ortForNode } from '../runtime/ort-node';
import { buildSelftestCase, judgeRun, maxAbsDiff, runSelftestCase, selftestReference } from './selftest-graph';

describe('self-test graph (ONNX writer + onnxruntime-web wasm in Node)', () => {
  it('runs MatMul + Softmax on the wasm EP and matches an fp64 reference', async () => {
    const ort = ortForNode();
    const c = buildSelftestCase();
    const session = await ort.InferenceSession.create(c.model, { executionProviders: ['wasm'] });
    try {
      const result = await session.run({ x: new ort.Tensor('float32', c.input, c.dims) });
      const probs = result.probs;
      expect(probs?.dims).toEqual([8, 16]);
      const data = probs?.data as Float32Array;
      expect(maxAbsDiff(data, selftestReference(c))).toBeLessThan(1e-6);
      // Rows are distributions.
      for (let r = 0; r < 8; r++) {
        const row = data.subarray(r * 16, r * 16 + 16);
        expect(row.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 5);
      }
    } finally {
      await session.release();
    }
  });

  it('the self-test passes the right graph and flags a wrong one (negative control through the same run)', async () => {
    const ort = ortForNode();
    const right = judgeRun(await runSelftestCase(ort, 'wasm', buildSelftestCase()));
    expect(right.ok).toBe(true);
    // A graph whose weights differ from the ones the reference uses: the run succeeds, the verdict must not.
    const wrong = judgeRun(await runSelftestCase(ort, 'wasm', buildSelftestCase(8)));
    expect(wrong.ok).toBe(false);
    expect(wrong.maxDiff).toBeGreaterThan(1e-3);
    expect(judgeRun({ ok: false, error: 'no adapter' }).ok).toBe(false);
  });
});
