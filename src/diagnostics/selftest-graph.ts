/**
 * The WebGPU self-test: a tiny MatMul + Softmax graph, built with our own ONNX writer, with fixed pseudo-random
 * weights and inputs, plus an fp64 reference so any backend's answer can be checked.
 */
import type * as OrtModule from 'onnxruntime-common';
import { OnnxGraph } from '../model/graph/onnx';
import type { BackendRun } from './selftest-protocol';

/** A backend passes when it agrees with the fp64 reference this closely. */
export const SELFTEST_TOLERANCE = 1e-5;

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

/** The self-test case; `weightSeed` exists so a test can build a graph that differs from the reference. */
export function buildSelftestCase(weightSeed = 7): SelftestCase {
  const { rows, inner, cols } = SELFTEST_SHAPE;
  const g = new OnnxGraph('selftest_matmul_softmax');
  const x = g.input('x', 'float32', ['rows', inner]);
  const w = g.constFloat32(lcgValues(inner * cols, weightSeed), [inner, cols], 'w');
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

/** Run a self-test case on one execution provider alone (no fallback), timing it. */
export async function runSelftestCase(
  ort: Pick<typeof OrtModule, 'InferenceSession' | 'Tensor'>,
  ep: 'webgpu' | 'wasm',
  c: SelftestCase,
): Promise<BackendRun> {
  const started = performance.now();
  try {
    const session = await ort.InferenceSession.create(c.model, { executionProviders: [ep] });
    try {
      const out = await session.run({ x: new ort.Tensor('float32', c.input, c.dims) });
      const data = (await out.probs?.getData()) as Float32Array;
      return { ok: true, ms: performance.now() - started, output: Array.from(data) };
    } finally {
      await session.release();
    }
  } catch (e) {
    return { ok: false, error: e instanceof Error ? e.message : String(e) };
  }
}

/** The verdict on one backend's run: its distance from the fp64 reference of the intended graph. */
export function judgeRun(run: BackendRun): { ok: boolean; maxDiff: number } {
  if (!run.ok) return { ok: false, maxDiff: Number.POSITIVE_INFINITY };
  const maxDiff = maxAbsDiff(run.output, selftestReference(buildSelftestCase()));
  return { ok: maxDiff <= SELFTEST_TOLERANCE, maxDiff };
}
