/**
 * The Llama-family graph for tree verification, built from config.json + safetensors entries:
 *
 *   inputs   input_ids int64 [1, q], position_ids int64 [1, q] (tree node = committed length + depth),
 *            attention_bias float32 [1, 1, q, kept + q] (0 = visible, MASKED = hidden),
 *            keep_indices int64 [kept] (cache slots kept from the past, in order: compaction fused into the call),
 *            logits_rows int64 [rows] (which of the q positions need logits),
 *            past_key_values.{i}.key / .value [1, kvHeads, past, headDim]
 *   outputs  logits float32 [1, rows, vocab], present.{i}.key / .value [1, kvHeads, kept + q, headDim]
 *
 * Activations are kept 2-D ([q, hidden]) so that every projection is a Gemm with transB = 1 straight on the
 * checkpoint's [out, in] weights. Weights already in the compute precision stay where they are in the safetensors
 * bytes (external data, no copy); others are converted once in JS (onnxruntime does not constant-fold a Cast of an
 * fp16 initializer, so an in-graph Cast would run on every call). compute 'fp16' runs matmuls in half precision
 * but keeps RoPE angles and norm statistics in fp32.
 */
import { expectedWeights, type LlamaConfig, ropeInvFreq } from '../config';
import { convertFloats, type FloatDtype } from '../convert';
import { ModelLoadError } from '../errors';
import type { SafetensorsDtype, TensorEntry } from '../safetensors';
import { MASKED } from './mask';
import { DATA_TYPE_CODE, type Dim, type OnnxDataType, OnnxGraph } from './onnx';

export type ComputeType = 'fp32' | 'fp16';

export { MASKED };

export const GRAPH_INPUTS = {
  inputIds: 'input_ids',
  positionIds: 'position_ids',
  attentionBias: 'attention_bias',
  keepIndices: 'keep_indices',
  logitsRows: 'logits_rows',
} as const;

export const pastKey = (i: number) => `past_key_values.${i}.key`;
export const pastValue = (i: number) => `past_key_values.${i}.value`;
export const presentKey = (i: number) => `present.${i}.key`;
export const presentValue = (i: number) => `present.${i}.value`;

const ONNX_DTYPE: Partial<Record<SafetensorsDtype, OnnxDataType>> = {
  F32: 'float32',
  F16: 'float16',
  BF16: 'bfloat16',
};

/** Check every expected tensor exists with the expected shape; name the first that does not. */
export function checkWeights(cfg: LlamaConfig, weights: ReadonlyMap<string, TensorEntry>): void {
  for (const [name, shape] of expectedWeights(cfg)) {
    const t = weights.get(name);
    if (!t) throw new ModelLoadError(`weights: tensor ${name} is missing (config.json says it should exist)`);
    if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
      throw new ModelLoadError(
        `config/weights mismatch: ${name} has shape [${t.shape.join(', ')}] but config.json implies [${shape.join(', ')}]`,
      );
    }
    if (!ONNX_DTYPE[t.dtype]) throw new ModelLoadError(`weights: ${name} has dtype ${t.dtype}; need F32, F16 or BF16`);
  }
}

export interface BuiltGraph {
  model: Uint8Array;
  /** The buffers the graph's external initializers point into: pass them to ORT as `externalData`. */
  externalData: { path: string; data: Uint8Array }[];
  compute: ComputeType;
  /** Bytes of weights that had to be converted to the compute precision (0 when all were used in place). */
  convertedBytes: number;
}

/** Name of the in-memory external-data buffer holding converted weights. */
export const CONVERTED_WEIGHTS = 'converted-weights.bin';

/**
 * 'tree' is our signature (above). 'transformers' is the interface transformers.js expects of a decoder export
 * (input_ids, attention_mask, position_ids, past_key_values.* -> logits for every position, present.*), used to
 * run transformers.js on the very same weights as a peer in the benchmark; it derives the causal bias, keeps the
 * whole past and returns all rows. It supports batch size 1.
 */
export type GraphInterface = 'tree' | 'transformers';

export interface BuildOptions {
  compute?: ComputeType;
  interface?: GraphInterface;
  /** Put every weight in one external buffer of this name (an exported model.onnx_data), converted or copied. */
  weightsFile?: string;
}

export function buildLlamaGraph(
  cfg: LlamaConfig,
  weights: ReadonlyMap<string, TensorEntry>,
  files: ReadonlyMap<string, Uint8Array>,
  options: BuildOptions = {},
): BuiltGraph {
  checkWeights(cfg, weights);
  const compute = options.compute ?? 'fp32';
  const T: OnnxDataType = compute === 'fp16' ? 'float16' : 'float32';
  const g = new OnnxGraph(`${cfg.modelType}_${options.interface ?? 'tree'}_${compute}`);
  const ownFile = options.weightsFile ?? CONVERTED_WEIGHTS;
  const usedFiles = new Set<string>();
  const converted: { name: string; bytes: Uint8Array; offset: number }[] = [];
  let convertedBytes = 0;
  const { numHeads: nh, numKvHeads: kvh, headDim: hd } = cfg;
  const group = nh / kvh;

  const cast = (x: string, to: OnnxDataType) => g.op('Cast', [x], { to: DATA_TYPE_CODE[to] });
  const toT = (x: string) => (T === 'float32' ? x : cast(x, T));

  /** A checkpoint tensor as an external initializer in the compute precision. */
  const weightCache = new Set<string>();
  const weight = (name: string): string => {
    if (weightCache.has(name)) return name;
    weightCache.add(name);
    const t = weights.get(name) as TensorEntry;
    if (ONNX_DTYPE[t.dtype] === T && !options.weightsFile) {
      usedFiles.add(t.file);
      return g.initializer({
        name,
        dataType: T,
        dims: t.shape,
        external: { location: t.file, offset: t.offset, length: t.byteLength },
      });
    }
    const file = files.get(t.file);
    if (!file) throw new ModelLoadError(`weights: ${name} points into ${t.file}, which was not loaded`);
    const bytes = convertFloats(
      file.subarray(t.offset, t.offset + t.byteLength),
      t.dtype as FloatDtype,
      T as 'float32',
    );
    converted.push({ name, bytes, offset: convertedBytes });
    const external = { location: ownFile, offset: convertedBytes, length: bytes.byteLength };
    convertedBytes += bytes.byteLength;
    return g.initializer({ name, dataType: T, dims: t.shape, external });
  };

  const linear = (x: string, prefix: string, bias = false) =>
    g.op('Gemm', bias ? [x, weight(`${prefix}.weight`), weight(`${prefix}.bias`)] : [x, weight(`${prefix}.weight`)], {
      transB: 1,
    });

  const eps = g.constFloat32([cfg.rmsNormEps], [], 'eps');
  const lastAxis = [-1];
  /** RMSNorm with fp32 statistics: weight * (x / sqrt(mean(x^2) + eps)), as HF's LlamaRMSNorm. */
  const rmsNorm = (x: string, w: string) => {
    const xf = T === 'float32' ? x : cast(x, 'float32');
    const ms = g.op('ReduceMean', [g.op('Mul', [xf, xf])], { axes: lastAxis, keepdims: 1 });
    const normed = g.op('Div', [xf, g.op('Sqrt', [g.op('Add', [ms, eps])])]);
    return g.op('Mul', [toT(normed), weight(w)]);
  };

  const { inputIds, positionIds, attentionBias, keepIndices, logitsRows } =
    options.interface === 'transformers' ? transformersInputs(g, cfg, T) : treeInputs(g, cfg, T);

  // Embedding: [q, H].
  const flatIds = g.op('Reshape', [inputIds, g.constInt64([-1])]);
  let x = g.op('Gather', [weight('model.embed_tokens.weight'), flatIds], { axis: 0 });

  // RoPE tables from per-token positions, in fp32: cos/sin [q, hd] broadcast over heads ([heads, q, hd]).
  const pos = g.op('Reshape', [cast(positionIds, 'float32'), g.constInt64([-1, 1])]);
  const freqs = g.op('Mul', [pos, g.constFloat32(ropeInvFreq(cfg), [1, hd / 2], 'inv_freq')]);
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

  const bias = toT(attentionBias); // [1, 1, q, total] broadcasts over [kvh, group, q, total]
  const scale = toT(g.constFloat32([1 / Math.sqrt(hd)], [], 'scale'));
  const headsShape = (heads: number) => g.constInt64([0, heads, hd]);
  const toHeads = (t: string, heads: number) =>
    g.op('Transpose', [g.op('Reshape', [t, headsShape(heads)])], { perm: [1, 0, 2] });
  const groupedShape = g.constInt64([kvh, group, -1, hd]);
  const mergedShape = g.constInt64([nh, -1, hd]);
  const flatShape = g.constInt64([0, -1]);
  const asPast = g.constInt64([0]); // Unsqueeze axes: [kvh, q, hd] -> [1, kvh, q, hd]

  for (let i = 0; i < cfg.numLayers; i++) {
    const p = `model.layers.${i}`;
    const h = rmsNorm(x, `${p}.input_layernorm.weight`);
    const q = rope(toHeads(linear(h, `${p}.self_attn.q_proj`, cfg.qkvBias), nh)); // [nh, q, hd]
    const k = rope(toHeads(linear(h, `${p}.self_attn.k_proj`, cfg.qkvBias), kvh)); // [kvh, q, hd]
    const v = toHeads(linear(h, `${p}.self_attn.v_proj`, cfg.qkvBias), kvh);
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
    const ctx = g.op('Reshape', [g.op('MatMul', [probs, vT]), mergedShape]); // [nh, q, hd]
    const ctxFlat = g.op('Reshape', [g.op('Transpose', [ctx], { perm: [1, 0, 2] }), flatShape]); // [q, nh*hd]
    x = g.op('Add', [x, linear(ctxFlat, `${p}.self_attn.o_proj`)]);
    // SwiGLU MLP.
    const h2 = rmsNorm(x, `${p}.post_attention_layernorm.weight`);
    const gate = linear(h2, `${p}.mlp.gate_proj`);
    const act = g.op('Mul', [g.op('Mul', [gate, g.op('Sigmoid', [gate])]), linear(h2, `${p}.mlp.up_proj`)]);
    x = g.op('Add', [x, linear(act, `${p}.mlp.down_proj`)]);
  }

  // Logits for the requested rows only.
  const rowsX = logitsRows ? g.op('Gather', [x, logitsRows], { axis: 0 }) : x;
  const normed = rmsNorm(rowsX, 'model.norm.weight');
  const head = cfg.tieWordEmbeddings ? 'model.embed_tokens.weight' : 'lm_head.weight';
  let logits = g.op('Gemm', [normed, weight(head)], { transB: 1 });
  if (T !== 'float32') logits = cast(logits, 'float32');
  g.op('Unsqueeze', [logits, g.constInt64([0])], {}, 'logits');
  g.output('logits', 'float32', [1, logitsRows ? 'rows' : 'q', cfg.vocabSize]);

  const externalData = [...usedFiles].map((path) => ({ path, data: files.get(path) as Uint8Array }));
  if (converted.length > 0) {
    const data = new Uint8Array(convertedBytes);
    for (const c of converted) data.set(c.bytes, c.offset);
    externalData.push({ path: ownFile, data });
  }
  return { model: g.toBytes(), externalData, compute, convertedBytes };
}

interface CoreInputs {
  inputIds: string;
  positionIds: string;
  /** float32 [1, 1, q, total] */
  attentionBias: string;
  /** null: keep the whole past. */
  keepIndices: string | null;
  /** null: logits for every position. */
  logitsRows: string | null;
}

function pastInputs(g: OnnxGraph, cfg: LlamaConfig, T: OnnxDataType, batch: Dim, past: Dim): void {
  for (let i = 0; i < cfg.numLayers; i++) {
    g.input(pastKey(i), T, [batch, cfg.numKvHeads, past, cfg.headDim]);
    g.input(pastValue(i), T, [batch, cfg.numKvHeads, past, cfg.headDim]);
  }
}

function treeInputs(g: OnnxGraph, cfg: LlamaConfig, T: OnnxDataType): CoreInputs {
  const inputs: CoreInputs = {
    inputIds: g.input(GRAPH_INPUTS.inputIds, 'int64', [1, 'q']),
    positionIds: g.input(GRAPH_INPUTS.positionIds, 'int64', [1, 'q']),
    attentionBias: g.input(GRAPH_INPUTS.attentionBias, 'float32', [1, 1, 'q', 'total']),
    keepIndices: g.input(GRAPH_INPUTS.keepIndices, 'int64', ['kept']),
    logitsRows: g.input(GRAPH_INPUTS.logitsRows, 'int64', ['rows']),
  };
  pastInputs(g, cfg, T, 1, 'past');
  return inputs;
}

/** transformers.js's decoder inputs; the causal (and padding) bias is built in the graph. */
function transformersInputs(g: OnnxGraph, cfg: LlamaConfig, T: OnnxDataType): CoreInputs {
  const inputIds = g.input('input_ids', 'int64', ['batch_size', 'sequence_length']);
  const mask = g.input('attention_mask', 'int64', ['batch_size', 'total_sequence_length']);
  const positionIds = g.input('position_ids', 'int64', ['batch_size', 'sequence_length']);
  pastInputs(g, cfg, T, 'batch_size', 'past_sequence_length');
  const scalar = (v: number) => g.constInt64([v], []);
  const dim = (t: string, axis: number) => g.op('Gather', [g.op('Shape', [t]), scalar(axis)], { axis: 0 });
  const q = dim(inputIds, 1);
  const past = dim(pastKey(0), 2);
  const total = g.op('Add', [past, q]);
  const cols = g.op('Range', [scalar(0), total, scalar(1)]); // [total]
  const rows = g.op('Unsqueeze', [g.op('Range', [past, total, scalar(1)]), g.constInt64([1])]); // [q, 1]
  const causal = g.op('LessOrEqual', [cols, rows]); // [q, total]
  const padding = g.op('Cast', [g.op('Reshape', [mask, g.constInt64([-1])])], { to: DATA_TYPE_CODE.bool });
  const visible = g.op('And', [causal, padding]);
  const bias = g.op('Where', [visible, g.constFloat32([0], []), g.constFloat32([MASKED], [])]);
  const attentionBias = g.op('Unsqueeze', [bias, g.constInt64([0, 1])]);
  return { inputIds, positionIds, attentionBias, keepIndices: null, logitsRows: null };
}
