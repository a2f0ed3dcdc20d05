/**
 * The fused body of the Llama graph: onnxruntime's contrib ops (com.microsoft), which both the wasm EP and the
 * WebGPU EP of onnxruntime-web implement (checked by building and running each one; see the tests). Per layer:
 *
 *   qkv   one projection over the stacked q/k/v weights (Gemm, or MatMulNBits in int4), Split
 *   RoPE  RotaryEmbedding on q and k, from per-call cos/sin tables [q, headDim / 2] built once from position_ids
 *         (the op indexes them with 0..q-1, so every tree node gets its own position; no table of the model's whole
 *         context, and the angles are the plain graph's fp32 angles)
 *   attn  GroupQueryAttention over the kept past (a Gather by keep_indices: compaction stays fused into the call)
 *         plus this call's keys, with the tree's attention_bias (its own causal mask is a superset of the tree mask
 *         because nodes come in topological order); it returns the present K/V
 *   norms SkipSimplifiedLayerNormalization: residual add + RMSNorm in one op, fp32 statistics
 *   mlp   one projection over the stacked gate/up weights, Split, SiLU * up, down projection
 *
 * about 15 nodes per layer against the plain body's 45. Returns the final-normed rows [rows, H].
 */
import type { GraphContext } from './llama';
import { pastKey, pastValue, presentKey, presentValue } from './signature';

const MS = 'com.microsoft';

/**
 * attention 'gqa': GroupQueryAttention; 'matmul': the same attention as two MatMuls over a broadcast axis, with the
 * cache gathered and concatenated by standard ops (for onnxruntime's CPU kernel, slow for many query rows).
 */
export function buildFusedBody(ctx: GraphContext, attention: 'gqa' | 'matmul' = 'gqa'): string {
  const { g, cfg, store, T, inputs, cast, toT, linear } = ctx;
  const { numHeads: nh, numKvHeads: kvh, headDim: hd, intermediateSize: m } = cfg;
  const nq = nh * hd;
  const nkv = kvh * hd;
  const { keepIndices, logitsRows } = inputs;
  const epsilon = { f: cfg.rmsNormEps };

  // Per-call RoPE tables in the compute type, and the local row index 0..q-1 of each token.
  const angles = ctx.ropeAngles();
  const cosTable = toT(g.op('Cos', [angles]));
  const sinTable = toT(g.op('Sin', [angles]));
  const scalar = (v: number) => g.constInt64([v], []);
  const q = g.op('Gather', [g.op('Shape', [inputs.inputIds]), scalar(1)], { axis: 0 });
  const local = g.op('Unsqueeze', [g.op('Range', [scalar(0), q, scalar(1)]), g.constInt64([0])]); // [1, q]

  // GroupQueryAttention's lengths: total = kept + q (int32 scalar) and seqlens_k = total - 1 ([1] int32).
  let totalLength = '';
  let seqlensK = '';
  if (attention === 'gqa') {
    const kept = keepIndices
      ? g.op('Gather', [g.op('Shape', [keepIndices]), scalar(0)], { axis: 0 })
      : g.op('Gather', [g.op('Shape', [pastKey(0)]), scalar(2)], { axis: 0 });
    const total = g.op('Add', [kept, q]);
    totalLength = cast(total, 'int32');
    seqlensK = cast(g.op('Reshape', [g.op('Sub', [total, scalar(1)]), g.constInt64([1])]), 'int32');
  }
  const bias = toT(inputs.attentionBias);

  const rotary = (x: string, heads: number) =>
    g.node('RotaryEmbedding', [x, local, cosTable, sinTable], {
      domain: MS,
      attrs: { num_heads: heads, rotary_embedding_dim: hd, interleaved: 0 },
    })[0] as string;
  const skipNorm = (x: string, skip: string, w: string) => {
    const [normed, , , sum] = g.node('SkipSimplifiedLayerNormalization', [x, skip, store.float(w)], {
      domain: MS,
      attrs: { epsilon },
      outputs: [`${w}.normed`, '', '', `${w}.residual`],
    });
    return { normed: normed as string, sum: sum as string };
  };
  const qkvSplit = g.constInt64([nq, nkv, nkv]);
  const mlpSplit = g.constInt64([m, m]);
  const as3d = g.constInt64([1, -1, nq + 2 * nkv]);
  const as2d = g.constInt64([-1, nq]);

  let x = ctx.embed(inputs.inputIds); // [q, H], the residual stream
  let h = g.op('SimplifiedLayerNormalization', [x, store.float('model.layers.0.input_layernorm.weight')], {
    axis: -1,
    epsilon,
    stash_type: 1,
  });
  for (let i = 0; i < ctx.layers; i++) {
    ctx.layerInput(i, x);
    const p = `model.layers.${i}`;
    const attn = (n: string) => `${p}.self_attn.${n}`;
    const qkvBias = cfg.qkvBias ? ['q', 'k', 'v'].map((n) => attn(`${n}_proj.bias`)) : undefined;
    const qkv = linear(
      h,
      ['q', 'k', 'v'].map((n) => attn(`${n}_proj.weight`)),
      attn('qkv_proj'),
      qkvBias,
    );
    const [q3, k3, v3] = g.node('Split', [g.op('Reshape', [qkv, as3d]), qkvSplit], {
      attrs: { axis: -1 },
      outputs: 3,
    }) as [string, string, string];
    const keptK = keepIndices ? g.op('Gather', [pastKey(i), keepIndices], { axis: 2 }) : pastKey(i);
    const keptV = keepIndices ? g.op('Gather', [pastValue(i), keepIndices], { axis: 2 }) : pastValue(i);
    let ctxOut = `${p}.attn_out`;
    if (attention === 'gqa') {
      g.node(
        'GroupQueryAttention',
        [rotary(q3, nh), rotary(k3, kvh), v3, keptK, keptV, seqlensK, totalLength, '', '', '', bias],
        {
          domain: MS,
          attrs: { num_heads: nh, kv_num_heads: kvh },
          outputs: [ctxOut, presentKey(i), presentValue(i)],
        },
      );
    } else {
      ctxOut = matmulAttention(ctx, i, rotary(q3, nh), rotary(k3, kvh), v3, keptK, keptV, bias);
    }
    g.output(presentKey(i), T, [1, kvh, 'total', hd]);
    g.output(presentValue(i), T, [1, kvh, 'total', hd]);
    const o = linear(g.op('Reshape', [ctxOut, as2d]), [attn('o_proj.weight')], attn('o_proj'));
    const post = skipNorm(x, o, `${p}.post_attention_layernorm.weight`);
    const mlp = (n: string) => `${p}.mlp.${n}`;
    const gateUp = linear(post.normed, [mlp('gate_proj.weight'), mlp('up_proj.weight')], mlp('gate_up_proj'));
    const [gate, up] = g.node('Split', [gateUp, mlpSplit], { attrs: { axis: -1 }, outputs: 2 }) as [string, string];
    const act = g.op('Mul', [g.op('Mul', [gate, g.op('Sigmoid', [gate])]), up]);
    const down = linear(act, [mlp('down_proj.weight')], mlp('down_proj'));
    const next = i + 1 < ctx.layers ? `model.layers.${i + 1}.input_layernorm.weight` : 'model.norm.weight';
    const pre = skipNorm(post.sum, down, next);
    h = pre.normed;
    x = pre.sum;
  }
  ctx.layerInput(ctx.layers, x);
  // h is the final-normed hidden state of every row; only the requested rows go to the head.
  return logitsRows ? g.op('Gather', [h, logitsRows], { axis: 0 }) : h;
}

/**
 * Attention of layer i as MatMuls: q [1, q, nh*hd], k and v [1, q, kvh*hd] (rotated), the kept past [1, kvh, kept,
 * hd]; writes present.{i}.key/value and returns the context [1, q, nh*hd]. Queries are grouped per KV head
 * ([kvh, group, q, hd]) against keys [kvh, 1, hd, total], so K/V are never copied per query head.
 */
function matmulAttention(
  ctx: GraphContext,
  i: number,
  q: string,
  k: string,
  v: string,
  keptK: string,
  keptV: string,
  bias: string,
): string {
  const { g, cfg, toT } = ctx;
  const { numHeads: nh, numKvHeads: kvh, headDim: hd } = cfg;
  const heads = (x: string, n: number) => g.op('Reshape', [x, g.constInt64([1, -1, n, hd])]); // [1, q, n, hd]
  const asCache = (x: string, n: number) => g.op('Transpose', [heads(x, n)], { perm: [0, 2, 1, 3] }); // [1, n, q, hd]
  const presentK = g.op('Concat', [keptK, asCache(k, kvh)], { axis: 2 }, presentKey(i));
  const presentV = g.op('Concat', [keptV, asCache(v, kvh)], { axis: 2 }, presentValue(i));
  const scale = toT(g.constFloat32([1 / Math.sqrt(hd)], [], `scale_${i}`));
  // [1, nh, q, hd] -> [kvh, group, q, hd]
  const qg = g.op('Reshape', [g.op('Mul', [asCache(q, nh), scale]), g.constInt64([kvh, nh / kvh, -1, hd])]);
  const kT = g.op('Transpose', [presentK], { perm: [1, 0, 3, 2] }); // [kvh, 1, hd, total]
  const vT = g.op('Transpose', [presentV], { perm: [1, 0, 2, 3] }); // [kvh, 1, total, hd]
  const probs = g.op('Softmax', [g.op('Add', [g.op('MatMul', [qg, kT]), bias])], { axis: -1 });
  const out = g.op('Reshape', [g.op('MatMul', [probs, vT]), g.constInt64([1, nh, -1, hd])]); // [1, nh, q, hd]
  return g.op('Transpose', [out], { perm: [0, 2, 1, 3] }); // [1, q, nh, hd]; reshaped to [q, nh*hd] by the caller
}
