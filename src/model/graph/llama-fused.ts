/**
 * The fused body of the Llama graph: onnxruntime's contrib ops (com.microsoft), which both the wasm EP and the
 * WebGPU EP of onnxruntime-web implement (checked by building and running each one; see the tests). Per layer:
 *
 *   qkv   one projection over the stacked q/k/v weights (Gemm, or MatMulNBits in int4), Split
 *   RoPE  RotaryEmbedding on q and k, from per-call cos/sin tables [q, headDim / 2] built once from rope_positions
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

import { firstTableRow, fusedOps } from './fused-ops';
import { joinCache, layerCache } from './layer-cache';
import type { GraphContext } from './llama';
import { type AttentionInputs, attentionInputs, groupedAttention } from './plain-ops';
import { pastKey, runAttention, runMlp } from './signature';
import { isSwitched, skippedCache, switchSubLayer, switchTypes, zeroCacheSlots } from './switches';

const MS = 'com.microsoft';

/**
 * attention 'gqa': GroupQueryAttention; 'matmul': the same attention as two MatMuls over a broadcast axis, with the
 * cache gathered and concatenated by standard ops (for onnxruntime's CPU kernel, slow for many query rows).
 */
export function buildFusedBody(ctx: GraphContext, attention: 'gqa' | 'matmul' = 'gqa'): string {
  const { g, cfg, store, inputs, cast, toT, linear } = ctx;
  const { numHeads: nh, numKvHeads: kvh, headDim: hd, intermediateSize: m } = cfg;
  const nq = nh * hd;
  const nkv = kvh * hd;
  const { keepIndices, logitsRows } = inputs;

  // Per-call RoPE tables in the compute type, row s for the call's row s.
  const angles = ctx.ropeAngles();
  const cosTable = toT(g.op('Cos', [angles]));
  const sinTable = toT(g.op('Sin', [angles]));
  const scalar = (v: number) => g.constInt64([v], []);
  const first = firstTableRow(g);
  const q = g.op('Gather', [g.op('Shape', [inputs.positionIds]), scalar(1)], { axis: 0 });

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
  const shared =
    attention === 'gqa' ? null : attentionInputs(g, bias, () => toT(g.constFloat32([1], [])), cfg, ctx.rowInvariant);

  const fused = fusedOps(g, (w) => store.float(w), cfg.rmsNormEps, hd);
  const rotary = (x: string, heads: number) => fused.rotary(x, heads, first, cosTable, sinTable);
  const { skipNorm, norm } = fused;
  const qkvSplit = g.constInt64([nq, nkv, nkv]);
  const mlpSplit = g.constInt64([m, m]);
  const as3d = g.constInt64([1, -1, nq + 2 * nkv]);
  const as2d = g.constInt64([-1, nq]);

  const nextNorm = (i: number) =>
    i + 1 < ctx.layers ? `model.layers.${i + 1}.input_layernorm.weight` : 'model.norm.weight';

  /**
   * Attention sub-layer of layer i from the residual x and its normed h: [x + attention, its post-attention norm,
   * present K, present V] (K/V named by the caller, or fresh inside a switch's branch).
   */
  const attentionLayer = (
    i: number,
    x: string,
    h: string,
    keptK: string,
    keptV: string,
    names: [string, string] | null,
  ) => {
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
    let ctxOut = `${p}.attn_out`;
    let present: [string, string];
    if (attention === 'gqa') {
      present = names ?? [`${p}.present_key_run`, `${p}.present_value_run`];
      g.node(
        'GroupQueryAttention',
        [rotary(q3, nh), rotary(k3, kvh), v3, keptK, keptV, seqlensK, totalLength, '', '', '', bias],
        {
          domain: MS,
          attrs: { num_heads: nh, kv_num_heads: kvh },
          outputs: [ctxOut, ...present],
        },
      );
    } else {
      ({ ctx: ctxOut, present } = matmulAttention(
        ctx,
        i,
        rotary(q3, nh),
        rotary(k3, kvh),
        v3,
        keptK,
        keptV,
        shared as AttentionInputs,
        names,
      ));
    }
    const o = linear(g.op('Reshape', [ctxOut, as2d]), [attn('o_proj.weight')], attn('o_proj'));
    const post = skipNorm(x, o, `${p}.post_attention_layernorm.weight`);
    return [post.sum, post.normed, ...present];
  };
  /** MLP sub-layer of layer i from the residual x and its normed h: [x + mlp, the next layer's input norm of it]. */
  const mlpLayer = (i: number, x: string, h: string) => {
    const mlp = (n: string) => `model.layers.${i}.mlp.${n}`;
    const gateUp = linear(h, [mlp('gate_proj.weight'), mlp('up_proj.weight')], mlp('gate_up_proj'));
    const [gate, up] = g.node('Split', [gateUp, mlpSplit], { attrs: { axis: -1 }, outputs: 2 }) as [string, string];
    const act = g.op('Mul', [g.op('Mul', [gate, g.op('Sigmoid', [gate])]), up]);
    const down = linear(act, [mlp('down_proj.weight')], mlp('down_proj'));
    const pre = skipNorm(x, down, nextNorm(i));
    return [pre.sum, pre.normed];
  };

  const zeroKv = ctx.layerSwitches ? zeroCacheSlots(ctx) : null;
  const { residual, cacheK, cacheV } = switchTypes(ctx);

  let x = ctx.embed(inputs.inputIds); // [q, H], the residual stream
  let h = norm(x, 'model.layers.0.input_layernorm.weight'); // x normed for the next sub-layer
  for (let i = 0; i < ctx.layers; i++) {
    ctx.layerInput(i, x);
    const { keptK, keptV, names } = layerCache(ctx, i);
    if (!isSwitched(ctx, i)) {
      [x, h] = attentionLayer(i, x, h, keptK, keptV, names) as [string, string];
      [x, h] = mlpLayer(i, x, h) as [string, string];
      continue;
    }
    // Behind switches: a skipped sub-layer passes x through and normalises it for whatever comes next.
    const [x0, h0] = [x, h];
    [x, h] = switchSubLayer(
      ctx,
      `attention_${i}`,
      runAttention(i),
      [residual, residual, cacheK, cacheV],
      () => attentionLayer(i, x0, h0, keptK, keptV, null),
      () => [
        g.op('Identity', [x0]),
        norm(x0, `model.layers.${i}.post_attention_layernorm.weight`),
        ...skippedCache(ctx, keptK, keptV, zeroKv as { k: string; v: string }),
      ],
      [`model.layers.${i}.attention_out`, `model.layers.${i}.attention_normed`, ...names],
    ) as [string, string];
    const [x1, h1] = [x, h];
    [x, h] = switchSubLayer(
      ctx,
      `mlp_${i}`,
      runMlp(i),
      [residual, residual],
      () => mlpLayer(i, x1, h1),
      () => [g.op('Identity', [x1]), norm(x1, nextNorm(i))],
      2,
    ) as [string, string];
  }
  ctx.layerInput(ctx.layers, x);
  // h is the final-normed hidden state of every row; only the requested rows go to the head.
  return logitsRows ? g.op('Gather', [h, logitsRows], { axis: 0 }) : h;
}

/**
 * Attention of layer i as MatMuls: q [1, q, nh*hd], k and v [1, q, kvh*hd] (rotated), the kept past [1, kvh, kept,
 * hd]; returns the context [1, q, nh*hd] and the present K/V (named `names`, or fresh). Queries are grouped per KV head
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
  shared: AttentionInputs,
  names: [string, string] | null,
): { ctx: string; present: [string, string] } {
  const { g, cfg, toT } = ctx;
  const { numHeads: nh, numKvHeads: kvh, headDim: hd } = cfg;
  const heads = (x: string, n: number) => g.op('Reshape', [x, g.constInt64([1, -1, n, hd])]); // [1, q, n, hd]
  const asCache = (x: string, n: number) => g.op('Transpose', [heads(x, n)], { perm: [0, 2, 1, 3] }); // [1, n, q, hd]
  const scale = toT(g.constFloat32([1 / Math.sqrt(hd)], [], `scale_${i}`));
  const { kT, vT, present } = joinCache(g, ctx.hostCache, asCache(k, kvh), asCache(v, kvh), keptK, keptV, names);
  const attended = groupedAttention(g, g.op('Mul', [asCache(q, nh), scale]), kT, vT, shared);
  const out = g.op('Reshape', [attended, g.constInt64([1, nh, -1, hd])]); // [1, nh, q, hd]
  // [1, q, nh, hd]; reshaped to [q, nh*hd] by the caller
  return { ctx: g.op('Transpose', [out], { perm: [0, 2, 1, 3] }), present };
}
