/**
 * The standard-op building blocks of a Llama-style decoder layer, shared by the target's plain body and the
 * EAGLE head: RMSNorm with fp32 statistics, RoPE by rotating halves, and grouped-query attention over a cache as
 * two MatMuls over a broadcast axis (no K/V copy per head).
 */
import { joinCache } from './layer-cache';
import type { OnnxDataType, OnnxGraph } from './onnx';

export interface PlainOpsConfig {
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  rmsNormEps: number;
  /** The cache is the caller's (layer-cache.ts): the kept K/V come in the attention's layouts, only new rows go out. */
  hostCache?: boolean;
}

/**
 * Softmax attention of scaled queries (any shape holding [nh, q, hd] in that order) against keys [kvh, 1, hd, total]
 * and values [kvh, 1, total, hd] under the call's bias (attentionInputs): [kvh, *, *, hd], which reshapes to [nh, q,
 * hd]. Two formulations, chosen per graph (attentionInputs):
 *
 * Plain: Softmax, then two MatMuls (the fewest ops).
 *
 * Row-invariant: a query row gets the same bits whatever else the call holds (more rows, more keys it may not see),
 * so a one-token decoding call and a verify call of q tokens compute a token's logits identically. With
 * onnxruntime's wasm kernels the plain formulation gives them different last bits, for two reasons found op by op: a
 * one-row MatMul (M = 1) sums in another order than a MatMul of two or more rows (for 3 of 4 key counts), and
 * Softmax sums its exponentials in SIMD lanes, so masked keys added to a row (the other tokens of a verify call) move
 * where its tail is added (for 22% of lengths). In fp32 that flips a token only at an exact near-tie (none seen in
 * the bench); in int8, where each projection's input is rounded to 8 bits, a last-bit change can move a code and a
 * logit by up to 3e-2, and speculation left plain int8 decoding in 11 of 72 bench generations. So:
 *   - no MatMul has a single row: with grouped-query attention (group >= 2) each KV head's queries of all its query
 *     heads form one matrix of group * q rows (free: the same memory, and the bias tiled once per call); with one
 *     query head per KV head the queries get a copy of their first row, dropped at the end;
 *   - softmax is exp(s - max) (ReduceMax and Exp give each element the same bits wherever it sits), and its sum is a
 *     MatMul by a column of ones, like the weighted sum of values a MatMul too: a MatMul sums over keys in key order,
 *     so a masked key (a zero) adds nothing, appended or between two keys the row sees; the division comes last.
 * It costs 4 more ops a layer: on the bundled target (wasm, 2 threads) 6-7% of a call in int8, 4-10% in fp32.
 */
export function groupedAttention(
  g: OnnxGraph,
  scaledQueries: string,
  kT: string,
  vT: string,
  inputs: AttentionInputs,
): string {
  const { kvh, group, hd, ones } = inputs;
  if (!ones) {
    const qg = g.op('Reshape', [scaledQueries, g.constInt64([kvh, group, -1, hd])]); // [kvh, group, q, hd]
    const probs = g.op('Softmax', [g.op('Add', [g.op('MatMul', [qg, kT]), inputs.bias])], { axis: -1 });
    return g.op('MatMul', [probs, vT]);
  }
  const rows = g.constInt64([2]);
  let qg: string;
  if (group > 1)
    qg = g.op('Reshape', [scaledQueries, g.constInt64([kvh, 1, -1, hd])]); // [kvh, 1, group * q, hd]
  else {
    const heads = g.op('Reshape', [scaledQueries, g.constInt64([kvh, 1, -1, hd])]); // [kvh, 1, q, hd]
    const first = g.op('Slice', [heads, g.constInt64([0]), g.constInt64([1]), rows]);
    qg = g.op('Concat', [heads, first], { axis: 2 }); // [kvh, 1, q + 1, hd]
  }
  const scores = g.op('Add', [g.op('MatMul', [qg, kT]), inputs.bias]);
  const e = g.op('Exp', [g.op('Sub', [scores, g.op('ReduceMax', [scores], { axes: [-1], keepdims: 1 })])]);
  const ctx = g.op('Div', [g.op('MatMul', [e, vT]), g.op('MatMul', [e, ones])]);
  return group > 1 ? ctx : g.op('Slice', [ctx, g.constInt64([0]), g.constInt64([-1]), rows]);
}

/** What every layer's groupedAttention shares, made once per call. */
export interface AttentionInputs {
  /**
   * The bias for the query rows as groupedAttention lays them out: the call's [1, 1, q, total]; row-invariant,
   * [1, 1, group * q, total] (tiled) or [1, 1, q + 1, total] (first row repeated).
   */
  bias: string;
  /** Row-invariant: [total, 1] of ones; plain: null. */
  ones: string | null;
  kvh: number;
  group: number;
  hd: number;
}

/**
 * Made once per graph, outside any If branch (a switched body's layers read them), from the call's attention bias
 * [1, 1, q, total] in the compute type; `one` makes a scalar 1 in that type (only the row-invariant form needs it).
 */
export function attentionInputs(
  g: OnnxGraph,
  bias: string,
  one: () => string,
  cfg: { numHeads: number; numKvHeads: number; headDim: number },
  rowInvariant: boolean,
): AttentionInputs {
  const kvh = cfg.numKvHeads;
  const group = cfg.numHeads / kvh;
  const dims = { kvh, group, hd: cfg.headDim };
  if (!rowInvariant) return { bias, ones: null, ...dims };
  const first = g.op('Slice', [bias, g.constInt64([0]), g.constInt64([1]), g.constInt64([2])]); // [1, 1, 1, total]
  const column = g.op('Reshape', [first, g.constInt64([-1, 1])]); // [total, 1]
  return {
    bias: group > 1 ? g.op('Tile', [bias, g.constInt64([1, 1, group, 1])]) : g.op('Concat', [bias, first], { axis: 2 }),
    // (b - b) + 1: ones of that length in the compute type (the bias is finite: MASKED is -65504, fp16's lowest)
    ones: g.op('Add', [g.op('Sub', [column, column]), one()]),
    ...dims,
  };
}

export function plainOps(
  g: OnnxGraph,
  T: 'float32' | 'float16',
  cast: (x: string, to: OnnxDataType) => string,
  /** A norm weight by checkpoint name, in the compute type. */
  weight: (name: string) => string,
  cfg: PlainOpsConfig,
) {
  const { numHeads: nh, headDim: hd } = cfg;
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
  const mergedShape = g.constInt64([nh, -1, hd]);
  const flatShape = g.constInt64([0, -1]);
  const asPast = g.constInt64([0]); // Unsqueeze axes: [kvh, q, hd] -> [1, kvh, q, hd]

  /**
   * Attention of rotated queries [nh, q, hd] and keys/values [kvh, q, hd] over the kept cache [1, kvh, kept, hd]
   * under an additive bias [1, 1, q, kept + q] in the compute type, given as attentionInputs. Returns the context
   * [q, nh * hd] and the present K/V [1, kvh, kept + q, hd] (named as given). With hostCache the kept cache comes as
   * keys [kvh, 1, hd, cap] and values [kvh, 1, cap, hd], the bias is [1, 1, q, cap + q], and the K/V returned are this
   * call's rows alone in those layouts.
   */
  const attend = (
    q: string,
    k: string,
    v: string,
    keptK: string,
    keptV: string,
    shared: AttentionInputs,
    names: [string, string] | null,
  ) => {
    const joined = joinCache(
      g,
      cfg.hostCache === true,
      g.op('Unsqueeze', [k, asPast]),
      g.op('Unsqueeze', [v, asPast]),
      keptK,
      keptV,
      names,
    );
    const [presentK, presentV] = joined.present;
    // Queries [kvh, group, q, hd] against keys [kvh, 1, hd, total].
    const attended = groupedAttention(g, g.op('Mul', [q, scale]), joined.kT, joined.vT, shared);
    const ctxHeads = g.op('Reshape', [attended, mergedShape]); // [nh, q, hd]
    const ctx = g.op('Reshape', [g.op('Transpose', [ctxHeads], { perm: [1, 0, 2] }), flatShape]); // [q, nh*hd]
    return { ctx, presentK, presentV };
  };

  /** SwiGLU: down(silu(gate) * up), given the three projections as functions of the normed input. */
  const swiglu = (gate: string, up: string) => g.op('Mul', [g.op('Mul', [gate, g.op('Sigmoid', [gate])]), up]);

  return { toT, rmsNorm, ropeFrom, toHeads, attend, swiglu };
}
