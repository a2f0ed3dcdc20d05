/**
 * The plain body of the Llama graph: standard ONNX ops only (about 45 per layer), so it runs on every execution
 * provider. RMSNorm with fp32 statistics, RoPE by slicing and rotating halves, grouped-query attention as two
 * MatMuls over a broadcast axis (no K/V copy per head), SwiGLU. Returns the final-normed rows [rows, H].
 */
import type { GraphContext } from './llama';
import { pastKey, pastValue, presentKey, presentValue } from './signature';

export function buildPlainBody(ctx: GraphContext): string {
  const { g, cfg, store, T, inputs, cast, toT, linear } = ctx;
  const { numHeads: nh, numKvHeads: kvh, headDim: hd } = cfg;
  const group = nh / kvh;
  const { keepIndices, logitsRows } = inputs;

  const eps = g.constFloat32([cfg.rmsNormEps], [], 'eps');
  const lastAxis = [-1];
  /** RMSNorm with fp32 statistics: weight * (x / sqrt(mean(x^2) + eps)), as HF's LlamaRMSNorm. */
  const rmsNorm = (x: string, w: string) => {
    const xf = T === 'float32' ? x : cast(x, 'float32');
    const ms = g.op('ReduceMean', [g.op('Mul', [xf, xf])], { axes: lastAxis, keepdims: 1 });
    const normed = g.op('Div', [xf, g.op('Sqrt', [g.op('Add', [ms, eps])])]);
    return g.op('Mul', [toT(normed), store.float(w)]);
  };

  // Embedding: [q, H].
  let x = ctx.embed(inputs.inputIds);

  // RoPE tables from per-token positions, in fp32: cos/sin [q, hd] broadcast over heads ([heads, q, hd]).
  const freqs = ctx.ropeAngles();
  const angles = g.node('Concat', [freqs, freqs], { attrs: { axis: -1 } })[0] as string;
  const cos = toT(g.op('Cos', [angles]));
  const sin = toT(g.op('Sin', [angles]));
  const halfStart = g.constInt64([0]);
  const halfMid = g.constInt64([hd / 2]);
  const halfEnd = g.constInt64([hd]);
  const axis2 = g.constInt64([2]);
  const rope = (t: string) => {
    const x1 = g.op('Slice', [t, halfStart, halfMid, axis2]);
    const x2 = g.op('Slice', [t, halfMid, halfEnd, axis2]);
    const rotated = g.op('Concat', [g.op('Neg', [x2]), x1], { axis: 2 });
    return g.op('Add', [g.op('Mul', [t, cos]), g.op('Mul', [rotated, sin])]);
  };

  const bias = toT(inputs.attentionBias); // [1, 1, q, total] broadcasts over [kvh, group, q, total]
  const scale = toT(g.constFloat32([1 / Math.sqrt(hd)], [], 'scale'));
  const headsShape = (heads: number) => g.constInt64([0, heads, hd]);
  const toHeads = (t: string, heads: number) =>
    g.op('Transpose', [g.op('Reshape', [t, headsShape(heads)])], { perm: [1, 0, 2] });
  const groupedShape = g.constInt64([kvh, group, -1, hd]);
  const mergedShape = g.constInt64([nh, -1, hd]);
  const flatShape = g.constInt64([0, -1]);
  const asPast = g.constInt64([0]); // Unsqueeze axes: [kvh, q, hd] -> [1, kvh, q, hd]
  const bias3 = (p: string, n: string) => (cfg.qkvBias ? [`${p}.self_attn.${n}_proj.bias`] : undefined);

  for (let i = 0; i < ctx.layers; i++) {
    const p = `model.layers.${i}`;
    const w = (n: string) => [`${p}.${n}.weight`];
    const h = rmsNorm(x, `${p}.input_layernorm.weight`);
    const q = rope(toHeads(linear(h, w('self_attn.q_proj'), `${p}.self_attn.q_proj`, bias3(p, 'q')), nh));
    const k = rope(toHeads(linear(h, w('self_attn.k_proj'), `${p}.self_attn.k_proj`, bias3(p, 'k')), kvh));
    const v = toHeads(linear(h, w('self_attn.v_proj'), `${p}.self_attn.v_proj`, bias3(p, 'v')), kvh);
    // Cache: keep the selected past slots, append this call's keys and values.
    const keptK = keepIndices ? g.op('Gather', [pastKey(i), keepIndices], { axis: 2 }) : pastKey(i);
    const keptV = keepIndices ? g.op('Gather', [pastValue(i), keepIndices], { axis: 2 }) : pastValue(i);
    const presentK = g.op('Concat', [keptK, g.op('Unsqueeze', [k, asPast])], { axis: 2 }, presentKey(i));
    const presentV = g.op('Concat', [keptV, g.op('Unsqueeze', [v, asPast])], { axis: 2 }, presentValue(i));
    g.output(presentKey(i), T, [1, kvh, 'total', hd]);
    g.output(presentValue(i), T, [1, kvh, 'total', hd]);
    // Grouped-query attention without copying K/V per head: queries [kvh, group, q, hd] against
    // keys [kvh, 1, hd, total] (the cache's batch axis moved into the broadcast axis).
    const qg = g.op('Reshape', [g.op('Mul', [q, scale]), groupedShape]);
    const kT = g.op('Transpose', [presentK], { perm: [1, 0, 3, 2] });
    const vT = g.op('Transpose', [presentV], { perm: [1, 0, 2, 3] });
    const scores = g.op('Add', [g.op('MatMul', [qg, kT]), bias]);
    const probs = g.op('Softmax', [scores], { axis: -1 });
    const ctxHeads = g.op('Reshape', [g.op('MatMul', [probs, vT]), mergedShape]); // [nh, q, hd]
    const ctxFlat = g.op('Reshape', [g.op('Transpose', [ctxHeads], { perm: [1, 0, 2] }), flatShape]); // [q, nh*hd]
    x = g.op('Add', [x, linear(ctxFlat, w('self_attn.o_proj'), `${p}.self_attn.o_proj`)]);
    // SwiGLU MLP.
    const h2 = rmsNorm(x, `${p}.post_attention_layernorm.weight`);
    const gate = linear(h2, w('mlp.gate_proj'), `${p}.mlp.gate_proj`);
    const up = linear(h2, w('mlp.up_proj'), `${p}.mlp.up_proj`);
    const act = g.op('Mul', [g.op('Mul', [gate, g.op('Sigmoid', [gate])]), up]);
    x = g.op('Add', [x, linear(act, w('mlp.down_proj'), `${p}.mlp.down_proj`)]);
  }

  // Only the requested rows go through the final norm and the head.
  const rowsX = logitsRows ? g.op('Gather', [x, logitsRows], { axis: 0 }) : x;
  return rmsNorm(rowsX, 'model.norm.weight');
}
