import { describe, expect, it } from 'vitest';
import { ortForNode } from '../runtime/ort-node';
import { OnnxGraph } from './graph/onnx';
import {
  allocInt4,
  allocInt8,
  concatInt4,
  dequantizeInt4,
  dequantizeInt8,
  quantizeActivationRow,
  quantizeInt4,
  quantizeInt8,
  quantizeInt8Rows,
  quantizeRows,
} from './quant';

function values(n: number, seed: number, scale = 1): Float32Array {
  let s = seed;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s / 2 ** 32 - 0.5) * 2 * scale;
  });
}

describe('blockwise int4 quantisation', () => {
  it('symmetric: every value within one step of its block, the largest magnitude exact', () => {
    const [n, k] = [6, 96];
    const w = values(n * k, 3);
    const q = quantizeInt4(w, n, k);
    const d = dequantizeInt4(q);
    for (let r = 0; r < n; r++) {
      for (let b = 0; b < k / 32; b++) {
        const scale = Math.abs(q.scales[r * 3 + b] as number);
        let extreme = 0;
        for (let i = 0; i < 32; i++) {
          const at = r * k + b * 32 + i;
          expect(Math.abs((d[at] as number) - (w[at] as number))).toBeLessThanOrEqual(scale * 1.0001);
          if (Math.abs(w[at] as number) > Math.abs(w[extreme] as number)) extreme = at;
          else if (i === 0) extreme = at;
        }
        expect(d[extreme]).toBeCloseTo(w[extreme] as number, 6);
      }
    }
    expect(q.zeroPoints).toBeNull();
  });

  it('with zero points: within half a step (no clamping), zero exact, codes use the block range', () => {
    const [n, k] = [4, 64];
    const w = values(n * k, 5).map((v) => v + 0.4); // lopsided blocks: asymmetric quantisation pays
    w[7] = 0;
    const q = quantizeInt4(w, n, k, { zeroPoints: true });
    const d = dequantizeInt4(q);
    for (let i = 0; i < w.length; i++) {
      const scale = q.scales[Math.floor(i / 32)] as number;
      expect(Math.abs((d[i] as number) - (w[i] as number))).toBeLessThanOrEqual(scale / 2 + 1e-6);
    }
    expect(d[7]).toBe(0);
    const sym = dequantizeInt4(quantizeInt4(w, n, k));
    const err = (x: Float32Array) => x.reduce((a, v, i) => a + Math.abs(v - (w[i] as number)), 0);
    expect(err(d)).toBeLessThan(err(sym));
  });

  it('pads a last partial block with zeros; row ranges and concatenation give the same codes as one pass', () => {
    const [n, k] = [5, 40];
    const w = values(n * k, 9);
    const whole = quantizeInt4(w, n, k, { zeroPoints: true });
    const parts = allocInt4(n, k, { zeroPoints: true });
    quantizeRows(parts, w.subarray(0, 2 * k), 0);
    quantizeRows(parts, w.subarray(2 * k), 2);
    expect(parts).toEqual(whole);
    const top = quantizeInt4(w.subarray(0, 2 * k), 2, k, { zeroPoints: true });
    const bottom = quantizeInt4(w.subarray(2 * k), 3, k, { zeroPoints: true });
    expect(concatInt4([top, bottom])).toEqual(whole);
    const d = dequantizeInt4(whole);
    for (let i = 0; i < w.length; i++) expect(Math.abs((d[i] as number) - (w[i] as number))).toBeLessThan(0.1);
  });

  it('rejects block sizes MatMulNBits cannot take', () => {
    expect(() => quantizeInt4(values(64, 1), 2, 32, { blockSize: 24 })).toThrow(/power of two/);
  });

  // The layout check: onnxruntime's MatMulNBits on our codes computes x * dequantised(W)^T.
  for (const [label, zeroPoints, k] of [
    ['symmetric', false, 64],
    ['zero points', true, 64],
    ['zero points, K not a multiple of the block', true, 72],
  ] as const) {
    it(`MatMulNBits (wasm EP) on our layout equals a matmul with the dequantised weights: ${label}`, async () => {
      const ort = ortForNode();
      const [m, n] = [3, 10];
      const w = values(n * k, 11);
      const q = quantizeInt4(w, n, k, { zeroPoints });
      const blocks = Math.ceil(k / 32);
      const g = new OnnxGraph('nbits');
      g.useDomain('com.microsoft', 1);
      g.input('x', 'float32', [m, k]);
      g.initializer({ name: 'b', dataType: 'uint8', dims: [n, blocks, 16], raw: q.codes });
      g.initializer({ name: 's', dataType: 'float32', dims: [n, blocks], raw: new Uint8Array(q.scales.buffer) });
      const ins = ['x', 'b', 's'];
      if (q.zeroPoints) {
        g.initializer({ name: 'z', dataType: 'uint8', dims: [n, Math.ceil(blocks / 2)], raw: q.zeroPoints });
        ins.push('z');
      }
      g.node('MatMulNBits', ins, {
        domain: 'com.microsoft',
        outputs: ['y'],
        attrs: { K: k, N: n, bits: 4, block_size: 32 },
      });
      g.output('y', 'float32', [m, n]);
      const session = await ort.InferenceSession.create(g.toBytes(), { executionProviders: ['wasm'] });
      const x = values(m * k, 13);
      const y = (await session.run({ x: new ort.Tensor('float32', x, [m, k]) })).y?.data as Float32Array;
      const d = dequantizeInt4(q);
      let diff = 0;
      for (let r = 0; r < m; r++) {
        for (let c = 0; c < n; c++) {
          let acc = 0;
          for (let i = 0; i < k; i++) acc += (x[r * k + i] as number) * (d[c * k + i] as number);
          diff = Math.max(diff, Math.abs(acc - (y[r * n + c] as number)));
        }
      }
      expect(diff).toBeLessThan(1e-4);
      await session.release();
    });
  }
});

describe('per-channel int8 quantisation', () => {
  it('every value within half a step of its row, the largest magnitude exact, codes in [-127, 127]', () => {
    const [n, k] = [5, 40];
    const w = values(n * k, 7, 3);
    w[2 * k + 9] = 0; // a zero stays zero
    const q = quantizeInt8(w, n, k);
    const d = dequantizeInt8(q);
    for (let r = 0; r < n; r++) {
      const scale = q.scales[r] as number;
      let extreme = r * k;
      let extremeCode = 0;
      for (let i = 0; i < k; i++) {
        const at = r * k + i;
        const code = q.codes[i * n + r] as number; // [K, N]
        expect(Math.abs((d[at] as number) - (w[at] as number))).toBeLessThanOrEqual(scale * 0.5001);
        expect(Math.abs(code)).toBeLessThanOrEqual(127);
        if (Math.abs(w[at] as number) > Math.abs(w[extreme] as number) || i === 0) {
          extreme = at;
          extremeCode = code;
        }
      }
      expect(Math.abs(extremeCode)).toBe(127);
      expect(d[extreme]).toBeCloseTo(w[extreme] as number, 5);
    }
    expect(d[2 * k + 9]).toBe(0);
    // An all-zero row has scale 0 and codes 0 (no division by zero).
    const zero = quantizeInt8(new Float32Array(8), 1, 8);
    expect(Array.from(zero.codes)).toEqual(new Array(8).fill(0));
    expect(zero.scales[0]).toBe(0);
  });

  it('row ranges and stacked tensors give the same codes as one pass, each row in its column of [K, N]', () => {
    const k = 12;
    const a = values(3 * k, 1);
    const b = values(4 * k, 2);
    const all = Float32Array.from([...a, ...b]);
    const whole = quantizeInt8(all, 7, k);
    // Two tensors stacked as the weight store does it: each quantised into its rows of one weight.
    const stacked = allocInt8(7, k);
    quantizeInt8Rows(stacked, a, 0);
    quantizeInt8Rows(stacked, b, 3);
    const piecewise = allocInt8(7, k);
    quantizeInt8Rows(piecewise, all.subarray(0, 2 * k), 0);
    quantizeInt8Rows(piecewise, all.subarray(2 * k), 2);
    for (const q of [stacked, piecewise]) {
      expect(Array.from(q.codes)).toEqual(Array.from(whole.codes));
      expect(Array.from(q.scales)).toEqual(Array.from(whole.scales));
    }
    // Row 3 alone, against its column in [K, N].
    const row3 = quantizeInt8(all.subarray(3 * k, 4 * k), 1, k);
    expect(Array.from({ length: k }, (_, i) => whole.codes[i * 7 + 3])).toEqual(Array.from(row3.codes));
  });

  it('an activation row: scale max|x| / 127, ties rounded to even, zero rows stay zero', () => {
    const x = [127, -63.5, 0.5, 1.5, -2.5, 0];
    // scale = 1: codes 127, -64 (tie to even), 0, 2, -2, 0
    expect(Array.from(quantizeActivationRow(x))).toEqual([127, -64, 0, 2, -2, 0]);
    expect(Array.from(quantizeActivationRow([0, 0, 0]))).toEqual([0, 0, 0]);
  });

  // The layout check: the graph's per-row activation quantisation and MatMulIntegerToFloat on our [K, N] codes
  // compute quantised(x) * dequantised(W)^T, row by row.
  it('MatMulIntegerToFloat (wasm EP) on our layout, inputs quantised per row, equals the reference', async () => {
    const ort = ortForNode();
    const [m, n, k] = [4, 9, 24];
    const w = values(n * k, 21);
    const q = quantizeInt8(w, n, k);
    const g = new OnnxGraph('int8');
    g.useDomain('com.microsoft', 1);
    g.input('x', 'float32', [m, k]);
    g.initializer({ name: 'b', dataType: 'int8', dims: [k, n], raw: new Uint8Array(q.codes.buffer) });
    g.initializer({ name: 's', dataType: 'float32', dims: [n], raw: new Uint8Array(q.scales.buffer) });
    g.initializer({ name: 'one', dataType: 'float32', dims: [], raw: new Uint8Array(new Float32Array([1]).buffer) });
    g.initializer({ name: 'zp', dataType: 'uint8', dims: [], raw: new Uint8Array([128]) });
    g.initializer({ name: 'zps', dataType: 'uint8', dims: [m], raw: new Uint8Array(m).fill(128) });
    const amax = g.op('ReduceMax', [g.op('Abs', ['x'])], { axes: [-1], keepdims: 1 });
    const scale = g.op('Mul', [amax, g.constFloat32([1 / 127], [])]);
    const codes = g.op('QuantizeLinear', ['x', g.op('Reshape', [scale, g.constInt64([-1])]), 'zps'], { axis: 0 });
    const [y] = g.node('MatMulIntegerToFloat', [codes, 'b', 'one', 's', 'zp'], { domain: 'com.microsoft' });
    g.op('Mul', [y as string, scale], {}, 'out');
    g.output('out', 'float32', [m, n]);
    const session = await ort.InferenceSession.create(g.toBytes(), { executionProviders: ['wasm'] });
    const x = values(m * k, 23, 2);
    const out = (await session.run({ x: new ort.Tensor('float32', x, [m, k]) })).out?.data as Float32Array;
    const d = dequantizeInt8(q);
    let diff = 0;
    for (let r = 0; r < m; r++) {
      const xr = quantizeActivationRow(x.subarray(r * k, (r + 1) * k));
      for (let c = 0; c < n; c++) {
        let acc = 0;
        for (let i = 0; i < k; i++) acc += (xr[i] as number) * (d[c * k + i] as number);
        diff = Math.max(diff, Math.abs(acc - (out[r * n + c] as number)));
      }
    }
    expect(diff).toBeLessThan(1e-5);
    await session.release();
  });
});
