/**
 * The plain body of the Llama graph: standard ONNX ops only (about 45 per layer), so it runs on every execution
 * provider. RMSNorm with fp32 statistics, RoPE by slicing and rotating halves, grouped-query attention as two
 * MatMuls over a broadcast axis (no K/V copy per head), SwiGLU. Returns the final-normed rows [rows, H].
 */

import { layerCache } from './layer-cache';
import type { GraphContext } from './llama';
import { attentionInputs, plainOps } from './plain-ops';
import { runAttention, runMlp } from './signature';
import { isSwitched, skippedCache, switchSubLayer, switchTypes, zeroCacheSlots } from './switches';

export function buildPlainBody(ctx: GraphContext): string {
  const { g, cfg, store, T, inputs, cast, toT, linear } = ctx;
  const { numHeads: nh, numKvHeads: kvh } = cfg;
  const { logitsRows } = inputs;

  const ops = plainOps(g, T, cast, (w) => store.float(w), { ...cfg, hostCache: ctx.hostCache });
  const { rmsNorm, toHeads } = ops;

  // Embedding: [q, H].
  let x = ctx.embed(inputs.inputIds);

  // RoPE from per-token positions, in fp32 angles: cos/sin [q, hd] broadcast over heads ([heads, q, hd]).
  const rope = ops.ropeFrom(ctx.ropeAngles());
  // The bias [1, 1, q, total] (laid out for groupedAttention) broadcasts over the query rows of every KV head.
  const bias = attentionInputs(g, toT(inputs.attentionBias), () => toT(g.constFloat32([1], [])), cfg, ctx.rowInvariant);
  const bias3 = (p: string, n: string) => (cfg.qkvBias ? [`${p}.self_attn.${n}_proj.bias`] : undefined);

  /** Attention sub-layer of layer i: returns [x + attention, present K, present V] (K/V named by the caller). */
  const attention = (i: number, x0: string, keptK: string, keptV: string, names: [string, string] | null) => {
    const p = `model.layers.${i}`;
    const w = (n: string) => [`${p}.${n}.weight`];
    const h = rmsNorm(x0, `${p}.input_layernorm.weight`);
    const q = rope(toHeads(linear(h, w('self_attn.q_proj'), `${p}.self_attn.q_proj`, bias3(p, 'q')), nh));
    const k = rope(toHeads(linear(h, w('self_attn.k_proj'), `${p}.self_attn.k_proj`, bias3(p, 'k')), kvh));
    const v = toHeads(linear(h, w('self_attn.v_proj'), `${p}.self_attn.v_proj`, bias3(p, 'v')), kvh);
    const { ctx: ctxFlat, presentK, presentV } = ops.attend(q, k, v, keptK, keptV, bias, names);
    return [g.op('Add', [x0, linear(ctxFlat, w('self_attn.o_proj'), `${p}.self_attn.o_proj`)]), presentK, presentV];
  };
  /** SwiGLU MLP sub-layer of layer i: x + mlp(norm(x)). */
  const mlp = (i: number, x0: string) => {
    const p = `model.layers.${i}`;
    const w = (n: string) => [`${p}.${n}.weight`];
    const h2 = rmsNorm(x0, `${p}.post_attention_layernorm.weight`);
    const gate = linear(h2, w('mlp.gate_proj'), `${p}.mlp.gate_proj`);
    const up = linear(h2, w('mlp.up_proj'), `${p}.mlp.up_proj`);
    return g.op('Add', [x0, linear(ops.swiglu(gate, up), w('mlp.down_proj'), `${p}.mlp.down_proj`)]);
  };

  const zeroKv = ctx.layerSwitches ? zeroCacheSlots(ctx) : null;
  const { residual, cacheK, cacheV } = switchTypes(ctx);

  for (let i = 0; i < ctx.layers; i++) {
    ctx.layerInput(i, x);
    const { keptK, keptV, names } = layerCache(ctx, i);
    if (!isSwitched(ctx, i)) {
      [x] = attention(i, x, keptK, keptV, names) as [string];
      x = mlp(i, x);
      continue;
    }
    const x0 = x;
    [x] = switchSubLayer(
      ctx,
      `attention_${i}`,
      runAttention(i),
      [residual, cacheK, cacheV],
      () => attention(i, x0, keptK, keptV, null),
      () => [g.op('Identity', [x0]), ...skippedCache(ctx, keptK, keptV, zeroKv as { k: string; v: string })],
      [`model.layers.${i}.attention_out`, ...names],
    ) as [string];
    const x1 = x;
    [x] = switchSubLayer(
      ctx,
      `mlp_${i}`,
      runMlp(i),
      [residual],
      () => [mlp(i, x1)],
      () => [g.op('Identity', [x1])],
      1,
    ) as [string];
  }

  ctx.layerInput(ctx.layers, x);
  // Only the requested rows go through the final norm and the head.
  const rowsX = logitsRows ? g.op('Gather', [x, logitsRows], { axis: 0 }) : x;
  return rmsNorm(rowsX, 'model.norm.weight');
}
