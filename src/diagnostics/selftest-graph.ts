/**
 * The WebGPU self-test: a tiny MatMul + Softmax graph, built with our own ONNX writer, with fixed pseudo-random
 * weights and inputs, plus an fp64 reference so any backend's answer can be checked.
 */
import { OnnxGraph } from '../model/graph/onnx';

export const SELFTEST_SHAPE = { rows: 8, inner: 32, cols: 16 } as const;

/** Deterministic values in [-1, 1) from a 32-bit LCG: the same on every machine. */
export function lcgValues(count: number, seed: number): Float32Array {
  const out = new Float32Array(count);
  let s = seed >>> 0;
  for (let i = 0; i < count; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s / 2 ** 31 - 1;
  }
  return out;
}

export interface SelftestCase {
  model: Uint8Array;
  input: Float32Array;
  dims: [number, number];
}

export function buildSelftestCase(): SelftestCase {
  const { rows, inner, cols } = SELFTEST_SHAPE;
  const g = new OnnxGraph('selftest_matmul_softmax');
  const x = g.input('x', 'float32', ['rows', inner]);
  const w = g.constFloat32(lcgValues(inner * cols, 7), [inner, cols], 'w');
  const y = g.op('MatMul', [x, w]);
  g.op('Softmax', [y], { axis: -1 }, 'probs');
  g.output('probs', 'float32', ['rows', cols]);
  return { model: g.toBytes(), input: lcgValues(rows * inner, 11), dims: [rows, inner] };
}

/** softmax(x W) in fp64, row by row. */
export function selftestReference(c: SelftestCase): Float64Array {
  const { inner, cols } = SELFTEST_SHAPE;
  const rows = c.dims[0];
  const w = lcgValues(inner * cols, 7);
  const out = new Float64Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    const logits = new Float64Array(cols);
    for (let j = 0; j < cols; j++) {
      let acc = 0;
      for (let k = 0; k < inner; k++) acc += (c.input[r * inner + k] as number) * (w[k * cols + j] as number);
      logits[j] = acc;
    }
    const max = Math.max(...logits);
    let sum = 0;
    for (let j = 0; j < cols; j++) sum += Math.exp((logits[j] as number) - max);
    for (let j = 0; j < cols; j++) out[r * cols + j] = Math.exp((logits[j] as number) - max) / sum;
  }
  return out;
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length mismatch: ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs((a[i] as number) - (b[i] as number)));
  return m;
}
