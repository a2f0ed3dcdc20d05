/**
 * Graphs for draft heads, built by our writer from the heads' safetensors (layouts: tools/heads_layouts.md).
 *
 *   Medusa   hidden float32 [r, d], top_k int64 [1] -> logits float32 [K, r, V], and top_probs float32 /
 *            top_ids int64 [K, r, top_k]: each row's top_k most probable tokens under the head's softmax, most
 *            probable first (drafting reads these, 12 bytes a candidate instead of a vocabulary row a head);
 *            per head k: x = h; x = x + silu(W x + b) per ResBlock; logits_k = P_k x.
 *   EAGLE-3  one decoder layer over (embedding of the next token, a feature), with its own KV cache:
 *            inputs   token_embeds float32 [q, d] (the target's embeddings, gathered by the caller),
 *                     features float32 [q, 3d] (the target's three fused layer inputs, for real rows),
 *                     drafted float32 [q, d] (the parent's `out`, for drafted rows), real bool [q, 1] (which one),
 *                     rope_positions, attention_bias, keep_indices, logits_rows, past_key_values.0.key/value
 *            outputs  logits float32 [rows, draft_vocab], out float32 [q, d], present.0.key/value
 *            g = real ? fc(features) : drafted; a = attn(concat(input_layernorm(e), hidden_norm(g)));
 *            x = g + o_proj(a); out = x + mlp(post_attention_layernorm(x)); logits = lm_head(norm(out)).
 */
import type { LoadedHeads } from '../heads/load';
import { firstTableRow, fusedOps } from './fused-ops';
import { DATA_TYPE_CODE, type OnnxDataType, OnnxGraph } from './onnx';
import { attentionInputs, plainOps } from './plain-ops';
import { WeightStore } from './weights';

export interface BuiltHeadsGraph {
  model: Uint8Array;
  externalData: { path: string; data: Uint8Array }[];
  compute: 'fp32' | 'fp16';
}

export const HEAD_INPUTS = {
  hidden: 'hidden',
  /** int64 [1]: how many tokens of each Medusa head's row top_probs/top_ids hold (1 when they are not fetched). */
  topK: 'top_k',
  tokenEmbeds: 'token_embeds',
  features: 'features',
  drafted: 'drafted',
  real: 'real',
  /** float32 [q, 1]: each row's position, for the rotary angles (the graph reads no integer positions). */
  ropePositions: 'rope_positions',
  attentionBias: 'attention_bias',
  keepIndices: 'keep_indices',
  logitsRows: 'logits_rows',
  pastKey: 'past_key_values.0.key',
  pastValue: 'past_key_values.0.value',
} as const;

export const HEAD_OUTPUTS = {
  /** Medusa: every head's logits rows. */
  logits: 'logits',
  /** Medusa: every head's top_k probabilities (softmax over its row) and their token ids, largest first. */
  topProbs: 'top_probs',
  topIds: 'top_ids',
  /** EAGLE-3: the logits rows [rows, draftVocab] then every row's out [q, d], flattened into one. */
  logitsAndOut: 'logits_and_out',
  presentKey: 'present.0.key',
  presentValue: 'present.0.value',
};

/**
 * @param foldHalf fp16 weights of an fp32 graph handed over as they are, behind Casts onnxruntime folds (for the wasm
 *   EP: WeightStoreOptions.foldHalf)
 */
function setup(name: string, heads: LoadedHeads, compute: 'fp32' | 'fp16', foldHalf: boolean) {
  const T: 'float32' | 'float16' = compute === 'fp16' ? 'float16' : 'float32';
  const g = new OnnxGraph(name);
  const store = new WeightStore(g, heads.weights, heads.files, T, foldHalf ? { foldHalf } : {});
  const cast = (x: string, to: OnnxDataType) => g.op('Cast', [x], { to: DATA_TYPE_CODE[to] });
  const toT = (x: string) => (T === 'float32' ? x : cast(x, T));
  const toF32 = (x: string) => (T === 'float32' ? x : cast(x, 'float32'));
  const gemm = (x: string, w: string, bias?: string) =>
    g.op('Gemm', bias ? [x, store.float(w), store.float(bias)] : [x, store.float(w)], { transB: 1 });
  return { g, store, T, cast, toT, toF32, gemm };
}

export function buildMedusaGraph(heads: LoadedHeads, compute: 'fp32' | 'fp16', foldHalf = false): BuiltHeadsGraph {
  const shape = heads.medusa;
  if (!shape) throw new Error('buildMedusaGraph: not Medusa heads');
  const { g, store, T, toT, toF32, gemm } = setup('medusa_heads', heads, compute, foldHalf);
  const d = heads.weights.get('0.0.linear.weight')?.shape[1] as number;
  const V = heads.weights.get(`0.${shape.layers}.weight`)?.shape[0] as number;
  const h = toT(g.input(HEAD_INPUTS.hidden, 'float32', ['rows', d]));
  const perHead: string[] = [];
  for (let k = 0; k < shape.heads; k++) {
    let x = h;
    for (let l = 0; l < shape.layers; l++) {
      const y = gemm(x, `${k}.${l}.linear.weight`, `${k}.${l}.linear.bias`);
      x = g.op('Add', [x, g.op('Mul', [y, g.op('Sigmoid', [y])])]); // x + silu(W x + b)
    }
    perHead.push(g.op('Unsqueeze', [toF32(gemm(x, `${k}.${shape.layers}.weight`)), g.constInt64([0])]));
  }
  g.op('Concat', perHead, { axis: 0 }, HEAD_OUTPUTS.logits);
  g.output(HEAD_OUTPUTS.logits, 'float32', [shape.heads, 'rows', V]);
  // Fed on every call (onnxruntime-web cannot feed an input that has a default): 1 when only the logits are fetched.
  g.input(HEAD_INPUTS.topK, 'int64', [1]);
  g.node('TopK', [g.op('Softmax', [HEAD_OUTPUTS.logits], { axis: -1 }), HEAD_INPUTS.topK], {
    attrs: { axis: -1, largest: 1, sorted: 1 },
    outputs: [HEAD_OUTPUTS.topProbs, HEAD_OUTPUTS.topIds],
  });
  g.output(HEAD_OUTPUTS.topProbs, 'float32', [shape.heads, 'rows', 'k']);
  g.output(HEAD_OUTPUTS.topIds, 'int64', [shape.heads, 'rows', 'k']);
  return { model: g.toBytes(), externalData: store.externalData(), compute: T === 'float16' ? 'fp16' : 'fp32' };
}

/**
 * The head's two forms. 'plain': standard ONNX ops only. 'fused' (the default): its four RMSNorms as onnxruntime's
 * SimplifiedLayerNormalization (the post-attention one with the residual add, SkipSimplifiedLayerNormalization) and
 * RoPE as RotaryEmbedding, the contrib ops the target's hybrid graph uses, which the wasm and WebGPU EPs both
 * implement; attention stays MatMuls under the tree's bias. On WebGPU a call's time is mostly per-dispatch work on
 * the CPU (README, "On a real GPU"), and the fused form dispatches about half the kernels (counted on lavapipe:
 * 91 against 47 a call).
 */
export type Eagle3Form = 'plain' | 'fused';

export function buildEagle3Graph(
  heads: LoadedHeads,
  compute: 'fp32' | 'fp16',
  form: Eagle3Form = 'fused',
  foldHalf = false,
): BuiltHeadsGraph {
  const e = heads.eagle3;
  if (!e) throw new Error('buildEagle3Graph: not EAGLE-3 heads');
  const { g, store, T, cast, toT, toF32, gemm } = setup('eagle3_head', heads, compute, foldHalf);
  const d = e.numHeads * e.headDim;
  const { numHeads: nh, numKvHeads: kvh, headDim: hd } = e;
  const embeds = toT(g.input(HEAD_INPUTS.tokenEmbeds, 'float32', ['q', d]));
  const features = toT(g.input(HEAD_INPUTS.features, 'float32', ['q', 3 * d]));
  const drafted = toT(g.input(HEAD_INPUTS.drafted, 'float32', ['q', d]));
  const real = g.input(HEAD_INPUTS.real, 'bool', ['q', 1]);
  const positions = g.input(HEAD_INPUTS.ropePositions, 'float32', ['q', 1]);
  const bias = toT(g.input(HEAD_INPUTS.attentionBias, 'float32', [1, 1, 'q', 'total']));
  const keep = g.input(HEAD_INPUTS.keepIndices, 'int64', ['kept']);
  const rows = g.input(HEAD_INPUTS.logitsRows, 'int64', ['rows']);
  g.input(HEAD_INPUTS.pastKey, T, [1, kvh, 'past', hd]);
  g.input(HEAD_INPUTS.pastValue, T, [1, kvh, 'past', hd]);

  const ops = plainOps(g, T, cast, (w) => store.float(w), { ...e, rmsNormEps: e.rmsNormEps });
  const fused = fusedOps(g, (w) => store.float(w), e.rmsNormEps, hd);
  const norm = form === 'plain' ? ops.rmsNorm : fused.norm;
  const m = 'midlayer';
  const gIn = g.op('Where', [real, gemm(features, 'fc.weight'), drafted]); // [q, d]
  const attnIn = g.op('Concat', [norm(embeds, `${m}.input_layernorm.weight`), norm(gIn, `${m}.hidden_norm.weight`)], {
    axis: -1,
  }); // [q, 2d]: the embedding first
  const invFreq = Float32Array.from({ length: hd / 2 }, (_, i) => 1 / e.ropeTheta ** ((2 * i) / hd));
  const angles = g.op('Mul', [positions, g.constFloat32(invFreq, [1, hd / 2], 'inv_freq')]); // [q, hd / 2]
  let rope: (x: string, heads: number) => string;
  if (form === 'plain') {
    const rotate = ops.ropeFrom(angles);
    rope = (x, heads) => rotate(ops.toHeads(x, heads));
  } else {
    // RotaryEmbedding on [1, q, heads * hd] with per-call tables [q, hd / 2], row s for row s.
    const cosTable = toT(g.op('Cos', [angles]));
    const sinTable = toT(g.op('Sin', [angles]));
    const first = firstTableRow(g);
    rope = (x, heads) => {
      const rotated = fused.rotary(
        g.op('Reshape', [x, g.constInt64([1, -1, heads * hd])]),
        heads,
        first,
        cosTable,
        sinTable,
      );
      return ops.toHeads(g.op('Reshape', [rotated, g.constInt64([-1, heads * hd])]), heads);
    };
  }
  const q = rope(gemm(attnIn, `${m}.self_attn.q_proj.weight`), nh);
  const k = rope(gemm(attnIn, `${m}.self_attn.k_proj.weight`), kvh);
  const v = ops.toHeads(gemm(attnIn, `${m}.self_attn.v_proj.weight`), kvh);
  const keptK = g.op('Gather', [HEAD_INPUTS.pastKey, keep], { axis: 2 });
  const keptV = g.op('Gather', [HEAD_INPUTS.pastValue, keep], { axis: 2 });
  // A draft: its rows need not be invariant (the plain formulation, fewer ops).
  const shared = attentionInputs(
    g,
    bias,
    () => toT(g.constFloat32([1], [])),
    { numHeads: nh, numKvHeads: kvh, headDim: hd },
    false,
  );
  const attn = ops.attend(q, k, v, keptK, keptV, shared, [HEAD_OUTPUTS.presentKey, HEAD_OUTPUTS.presentValue]);
  g.output(HEAD_OUTPUTS.presentKey, T, [1, kvh, 'total', hd]);
  g.output(HEAD_OUTPUTS.presentValue, T, [1, kvh, 'total', hd]);
  const o = gemm(attn.ctx, `${m}.self_attn.o_proj.weight`);
  let x: string;
  let n: string;
  if (form === 'plain') {
    x = g.op('Add', [gIn, o]);
    n = ops.rmsNorm(x, `${m}.post_attention_layernorm.weight`);
  } else {
    ({ sum: x, normed: n } = fused.skipNorm(o, gIn, `${m}.post_attention_layernorm.weight`));
  }
  const mlp = gemm(
    ops.swiglu(gemm(n, `${m}.mlp.gate_proj.weight`), gemm(n, `${m}.mlp.up_proj.weight`)),
    `${m}.mlp.down_proj.weight`,
  );
  const out = g.op('Add', [x, mlp]);
  const normed = norm(g.op('Gather', [out, rows], { axis: 0 }), 'norm.weight');
  // One output read back instead of two: each read back costs a round trip to the GPU (about 0.75 ms on an H100,
  // bench/transfer-costs.ts). The logits rows [rows, draftVocab] come first, then every row's out [q, d].
  const flat = (t: string) => g.op('Reshape', [toF32(t), g.constInt64([-1])]);
  g.op('Concat', [flat(gemm(normed, 'lm_head.weight')), flat(out)], { axis: 0 }, HEAD_OUTPUTS.logitsAndOut);
  g.output(HEAD_OUTPUTS.logitsAndOut, 'float32', ['rows_x_vocab_plus_q_x_d']);
  return { model: g.toBytes(), externalData: store.externalData(), compute: T === 'float16' ? 'fp16' : 'fp32' };
}
