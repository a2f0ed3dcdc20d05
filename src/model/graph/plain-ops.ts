/**
 * The standard-op building blocks of a Llama-style decoder layer, shared by the target's plain body and the
 * EAGLE head: RMSNorm with fp32 statistics, RoPE by rotating halves, and grouped-query attention over a cache as
 * two MatMuls over a broadcast axis (no K/V copy per head).
 */
import type { OnnxDataType, OnnxGraph } from './onnx';

export interface PlainOpsConfig {
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  rmsNormEps: number;
}

export function plainOps(
  g: OnnxGraph,
  T: 'float32' | 'float16',
  cast: (x: string, to: OnnxDataType) => string,
  /** A norm weight by checkpoint name, in the compute type. */
  weight: (name: string) => string,
  cfg: PlainOpsConfig,
) {
  const { numHeads: nh, numKvHeads: kvh, headDim: hd } = cfg;
  const toT = (x: string) => (T === 'float32' ? x : cast(x, T));
  const eps = g.constFloat32([cfg.rmsNormEps], [], 'eps');
  /** RMSNorm with fp32 statistics: weight * (x / sqrt(mean(x^2) + eps)), as HF's LlamaRMSNorm. */
  const rmsNorm = (x: string, w: string) => {
    const xf = T === 'float32' ? x : cast(x, 'float32');
    const ms = g.op('ReduceMean', [g.op('Mul', [xf, xf])], { axes: [-1], keepdims: 1 });
    const normed = g.op('Div', [xf, g.op('Sqrt', [g.op('Add', [ms, eps])])]);
    return g.op('Mul', [toT(normed), weight(w)]);
  };

  /** RoPE from per-token angles [q, hd / 2] (fp32): rotates [heads, q, hd] tensors. */
  const ropeFrom = (freqs: string) => {
    const angles = g.node('Concat', [freqs, freqs], { attrs: { axis: -1 } })[0] as string;
    const cos = toT(g.op('Cos', [angles]));
    const sin = toT(g.op('Sin', [angles]));
    const halfStart = g.constInt64([0]);
    const halfMid = g.constInt64([hd / 2]);
    const halfEnd = g.constInt64([hd]);
    const axis2 = g.constInt64([2]);
    return (t: string) => {
      const x1 = g.op('Slice', [t, halfStart, halfMid, axis2]);
      const x2 = g.op('Slice', [t, halfMid, halfEnd, axis2]);
      const rotated = g.op('Concat', [g.op('Neg', [x2]), x1], { axis: 2 });
      return g.op('Add', [g.op('Mul', [t, cos]), g.op('Mul', [rotated, sin])]);
    };
  };

  const scale = toT(g.constFloat32([1 / Math.sqrt(hd)], [], 'scale'));
  const headsShape = (heads: number) => g.constInt64([0, heads, hd]);
  /** [q, heads * hd] -> [heads, q, hd] */
  const toHeads = (t: string, heads: number) =>
    g.op('Transpose', [g.op('Reshape', [t, headsShape(heads)])], { perm: [1, 0, 2] });
  const groupedShape = g.constInt64([kvh, nh / kvh, -1, hd]);
  const mergedShape = g.constInt64([nh, -1, hd]);
  const flatShape = g.constInt64([0, -1]);
  const asPast = g.constInt64([0]); // Unsqueeze axes: [kvh, q, hd] -> [1, kvh, q, hd]

  /**
   * Attention of rotated queries [nh, q, hd] and keys/values [kvh, q, hd] over the kept cache [1, kvh, kept, hd]
   * under an additive bias [1, 1, q, kept + q] (in the compute type). Returns the context [q, nh * hd] and the
   * present K/V [1, kvh, kept + q, hd] (named as given).
   */
  const attend = (
    q: string,
    k: string,
    v: string,
    keptK: string,
    keptV: string,
    bias: string,
    names: [string, string] | null,
  ) => {
    const presentK = g.op('Concat', [keptK, g.op('Unsqueeze', [k, asPast])], { axis: 2 }, names?.[0]);
    const presentV = g.op('Concat', [keptV, g.op('Unsqueeze', [v, asPast])], { axis: 2 }, names?.[1]);
    // Queries [kvh, group, q, hd] against keys [kvh, 1, hd, total] (the cache's batch axis moved into the
    // broadcast axis).
    const qg = g.op('Reshape', [g.op('Mul', [q, scale]), groupedShape]);
    const kT = g.op('Transpose', [presentK], { perm: [1, 0, 3, 2] });
    const vT = g.op('Transpose', [presentV], { perm: [1, 0, 2, 3] });
    const probs = g.op('Softmax', [g.op('Add', [g.op('MatMul', [qg, kT]), bias])], { axis: -1 });
    const ctxHeads = g.op('Reshape', [g.op('MatMul', [probs, vT]), mergedShape]); // [nh, q, hd]
    const ctx = g.op('Reshape', [g.op('Transpose', [ctxHeads], { perm: [1, 0, 2] }), flatShape]); // [q, nh*hd]
    return { ctx, presentK, presentV };
  };

  /** SwiGLU: down(silu(gate) * up), given the three projections as functions of the normed input. */
  const swiglu = (gate: string, up: string) => g.op('Mul', [g.op('Mul', [gate, g.op('Sigmoid', [gate])]), up]);

  return { toT, rmsNorm, ropeFrom, toHeads, attend, swiglu };
}
