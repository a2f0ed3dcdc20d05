/**
 * The Llama-family graph for tree verification, built from config.json + safetensors entries:
 *
 *   inputs   input_ids int64 [1, q], position_ids int64 [1, q] (tree node = committed length + depth; read for
 *            its shape), rope_positions float32 [q, 1] (the same positions, for the rotary angles),
 *            attention_bias float32 [1, 1, q, kept + q] (0 = visible, MASKED = hidden),
 *            keep_indices int64 [kept] (cache slots kept from the past, in order: compaction fused into the call),
 *            logits_rows int64 [rows] (which of the q positions need logits),
 *            past_key_values.{i}.key / .value [1, kvHeads, past, headDim]
 *            top_k int64 [1] (how many of each row's largest logits top_values/top_ids hold; 1 when unused),
 *   outputs  logits float32 [1, rows, vocab], argmax int64 [rows] (each requested row's best token: fetch it alone
 *            and only the token ids leave the device), top_values float32 / top_ids int64 [rows, top_k] (each
 *            row's largest logits, largest first, and their ids: what sampling with top-k needs),
 *            present.{i}.key / .value [1, kvHeads, kept + q, headDim]
 *
 * Two bodies compute the same function (llama-plain.ts: about 45 standard ONNX ops per layer; llama-fused.ts:
 * onnxruntime's contrib ops, about 15 per layer); weights are float in the compute precision or blockwise int4
 * (MatMulNBits). Activations are kept 2-D ([q, hidden]) so that every float projection is a Gemm with transB = 1
 * straight on the checkpoint's [out, in] weights. Weights already in the compute precision stay where they are in
 * the safetensors bytes (external data, no copy); others are converted once in JS (onnxruntime does not
 * constant-fold a Cast of an fp16 initializer, so an in-graph Cast would run on every call). compute 'fp16' runs
 * matmuls in half precision but keeps RoPE angles and norm statistics in fp32.
 *
 * int4 (as onnxruntime-genai's builder and transformers.js's q4 exports do): every projection and the LM head are
 * MatMulNBits (block 32, fp scales in the compute type); the embedding table stays a float Gather, stored in fp16
 * where the device can gather fp16 (a Gather reads only q rows, so its bytes cost memory, not bandwidth; the rows
 * are cast to the compute type).
 */
import { expectedWeights, type LlamaConfig, ropeInvFreq } from '../config';
import { ModelLoadError } from '../errors';
import { INT8_MIN_SCALE, type Int4Options } from '../quant';
import type { TensorEntry } from '../safetensors';
import { joinNewRows } from './layer-cache';
import { buildFusedBody } from './llama-fused';
import { buildPlainBody } from './llama-plain';
import { MASKED } from './mask';
import { DATA_TYPE_CODE, type Dim, type OnnxDataType, OnnxGraph } from './onnx';
import {
  GRAPH_INPUTS,
  GRAPH_OUTPUTS,
  HIDDEN_ROWS,
  NEW_KV,
  newKey,
  newValue,
  pastKey,
  pastValue,
  presentKey,
  presentValue,
  runAttention,
  runMlp,
} from './signature';
import { CONVERTED_WEIGHTS, type Int4Initializers, type Int8Initializers, ONNX_DTYPE, WeightStore } from './weights';

export type ComputeType = 'fp32' | 'fp16';
/**
 * How the weights are stored in the graph: the compute precision, blockwise int4 (MatMulNBits), or per-channel int8
 * with activations quantised per row (MatMulIntegerToFloat; fp32 compute, for wasm).
 */
export type WeightFormat = 'float' | 'int4' | 'int8';
/**
 * 'plain': standard ONNX ops only; 'fused': onnxruntime contrib ops (GroupQueryAttention, RotaryEmbedding,
 * SkipSimplifiedLayerNormalization, stacked projections); 'hybrid': the fused graph with attention as plain MatMuls
 * (onnxruntime's CPU GroupQueryAttention is slow for many query rows: a wide verify call on wasm).
 */
export type GraphVariant = 'plain' | 'fused' | 'hybrid';
export const GRAPH_VARIANTS: readonly GraphVariant[] = ['plain', 'fused', 'hybrid'];
/** The variants whose attention is ours (MatMuls), and so can take the row-invariant form; fused's GroupQueryAttention cannot. */
export const ROW_INVARIANT_VARIANTS: readonly GraphVariant[] = ['plain', 'hybrid'];

export {
  CONVERTED_WEIGHTS,
  GRAPH_INPUTS,
  GRAPH_OUTPUTS,
  HIDDEN_ROWS,
  MASKED,
  NEW_KV,
  newKey,
  newValue,
  pastKey,
  pastValue,
  presentKey,
  presentValue,
  runAttention,
  runMlp,
};

/** Check every expected tensor exists with the expected shape; name the first that does not. */
export function checkWeights(cfg: LlamaConfig, weights: ReadonlyMap<string, TensorEntry>): void {
  const expected = expectedWeights(cfg);
  for (const [name, shape] of expected) {
    const t = weights.get(name);
    if (!t) throw new ModelLoadError(`weights: tensor ${name} is missing (config.json says it should exist)`);
    if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
      throw new ModelLoadError(
        `config/weights mismatch: ${name} has shape [${t.shape.join(', ')}] but config.json implies [${shape.join(', ')}]`,
      );
    }
    if (!ONNX_DTYPE[t.dtype]) throw new ModelLoadError(`weights: ${name} has dtype ${t.dtype}; need F32, F16 or BF16`);
  }
  // A bias the config does not name (o_proj's, the MLP's, q/k/v's outside Qwen2) would be dropped: refused instead.
  for (const name of weights.keys()) {
    if (/\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)\.bias$/.test(name) && !expected.has(name))
      throw new ModelLoadError(
        `weights: tensor ${name} is a bias this model's config does not apply (it would be dropped)`,
      );
  }
  // Layers beyond the config's: a config saying fewer layers than were trained ran on the first ones, silently.
  let layers = 0;
  for (const name of weights.keys()) {
    const m = /^model\.layers\.(\d+)\./.exec(name);
    if (m) layers = Math.max(layers, Number(m[1]) + 1);
  }
  if (layers > cfg.numLayers)
    throw new ModelLoadError(
      `config/weights mismatch: the weights hold ${layers} layers (model.layers.0-${layers - 1}) but config.json says num_hidden_layers ${cfg.numLayers}`,
    );
}

export interface BuiltGraph {
  model: Uint8Array;
  /** The buffers the graph's external initializers point into: pass them to ORT as `externalData`. */
  externalData: { path: string; data: Uint8Array }[];
  compute: ComputeType;
  weightFormat: WeightFormat;
  variant: GraphVariant;
  /** Built with sub-layer switches (run_attention.{i} / run_mlp.{i} inputs). */
  layerSwitches: boolean;
  /** The caller keeps the cache (BuildOptions.hostCache): past in the attention's layouts, new.{i}.* out. */
  hostCache: boolean;
  /** The attention is in its row-invariant form (BuildOptions.rowInvariantAttention, in a variant that has it). */
  rowInvariantAttention: boolean;
  /** Bytes of weights that had to be converted or quantised (0 when all were used in place). */
  convertedBytes: number;
  /** Bytes of weights one call reads (every layer, the head, and q embedding rows). */
  weightBytes: number;
  /** Nodes in the graph (dispatches, roughly). */
  nodes: number;
}

/**
 * 'tree' is our signature (above). 'transformers' is the interface transformers.js expects of a decoder export
 * (input_ids, attention_mask, position_ids, past_key_values.* -> logits for every position, present.*), used to
 * run transformers.js on the very same weights as a peer in the benchmark; it derives the causal bias, keeps the
 * whole past and returns all rows. It supports batch size 1.
 */
export type GraphInterface = 'tree' | 'transformers';

export interface BuildOptions {
  compute?: ComputeType;
  weights?: WeightFormat;
  int4?: Int4Options;
  variant?: GraphVariant;
  interface?: GraphInterface;
  /** Put every weight in one external buffer of this name (an exported model.onnx_data), converted or copied. */
  weightsFile?: string;
  /**
   * fp16 checkpoint weights of an fp32 graph go in as they are, behind Cast nodes onnxruntime folds while it creates
   * the session (WeightStoreOptions.foldHalf): for the wasm EP only. A load of the bundled target in Node: about
   * 0.3 s less JavaScript (no fp32 copy of 57 MB), 28 MB less handed to onnxruntime.
   */
  foldHalfWeights?: boolean;
  /** Build only the first N layers and output the final hidden state instead of logits (a cost probe). */
  probeLayers?: number;
  /** int4 quantisation progress: fraction done, 0..1. */
  onQuantize?: (fraction: number) => void;
  /**
   * Switches that skip sub-layers (an If per attention and MLP sub-layer of every layer but the first and the
   * last; inputs run_attention.{i} / run_mlp.{i}): one graph, one copy of the weights, serves the target and its
   * layer-skipping self-draft. Every body (switches.ts).
   */
  layerSwitches?: boolean;
  /**
   * Also output hidden states of the rows given in hidden_rows, for draft heads: 'last' the final-normed state
   * (Medusa, EAGLE-1/2), 'eagle3' the inputs of layers 2, L/2 and L-3 concatenated (EAGLE-3). Absent: no such
   * outputs and no extra work.
   */
  hidden?: HiddenKind;
  /**
   * The MatMul attention (plain and hybrid graphs) in its row-invariant form: a token's logits get the same bits in a
   * one-token call and in a verify call (plain-ops.ts, groupedAttention; 4 more ops a layer). Default: with int8
   * weights, whose per-row input rounding turns last-bit differences into different tokens; fp32, fp16 and int4
   * differ only in the last bits, which flip a greedy token at an exact near-tie alone.
   */
  rowInvariantAttention?: boolean;
  /**
   * int4 only: the embedding table's type. Default 'float16' (half the memory; a Gather of q rows, then a cast);
   * a WebGPU device without shader-f16 cannot gather fp16, so the runner asks for the compute type there.
   */
  embeddingType?: 'float16' | 'float32';
  /**
   * The caller keeps the KV cache (the wasm runner, model/host-cache.ts) instead of handing it through every call:
   * past_key_values.{i}.key comes transposed [kvh, 1, hd, cap] and .value as [kvh, 1, cap, hd] (cap at least the
   * cache's length; the bias [1, 1, q, cap + q] masks the slots beyond it), already compacted (no keep_indices), and
   * only this call's rows go out, new.{i}.key [kvh, 1, hd, q] and new.{i}.value [kvh, 1, q, hd]. On the wasm EP every
   * input and output is copied between JavaScript and onnxruntime's heap: a present cache came out whole each call
   * (a fresh array), and the graph gathered, concatenated and transposed it again. MatMul attention only (the plain
   * and hybrid graphs); the tree interface.
   */
  hostCache?: boolean;
}

/** What the two bodies share: the graph, its weights and inputs, and the small helpers over them. */
export interface GraphContext {
  g: OnnxGraph;
  cfg: LlamaConfig;
  store: WeightStore;
  /** The compute type. */
  T: 'float32' | 'float16';
  weightFormat: WeightFormat;
  layers: number;
  inputs: CoreInputs;
  cast(x: string, to: OnnxDataType): string;
  /** x in the compute type (a no-op in fp32). */
  toT(x: string): string;
  /** x [q, K] times the stacked weights [N, K]^T (Gemm, or MatMulNBits in int4), plus the stacked biases if any. */
  linear(x: string, names: readonly string[], as: string, biases?: readonly string[]): string;
  /** Token embeddings [q, H] in the compute type. */
  embed(ids: string): string;
  /** BuildOptions.hostCache. */
  hostCache: boolean;
  /** Per-token RoPE angles [q, headDim / 2] in fp32, from the position ids. */
  ropeAngles(): string;
  /** Whether sub-layers 1..L-2 are behind If switches. */
  layerSwitches: boolean;
  /** The MatMul attention's row-invariant formulation (plain-ops.ts, groupedAttention). */
  rowInvariant: boolean;
  /** Bodies report the residual stream entering layer i (i = layers: leaving the last layer), for hidden outputs. */
  layerInput(i: number, x: string): void;
}

export type HiddenKind = 'last' | 'eagle3';

/** The three target layers whose inputs EAGLE-3 fuses (low, mid, high): 2, L/2, L-3 (SafeAILab/EAGLE). */
export function eagle3Layers(numLayers: number): [number, number, number] {
  return [2, Math.floor(numLayers / 2), numLayers - 3];
}

/** Elements an int4 or int8 build quantises (for progress reports). */
export function quantizedElements(cfg: LlamaConfig, layers = cfg.numLayers): number {
  let n = 0;
  for (const [name, shape] of expectedWeights(cfg)) {
    const layer = /^model\.layers\.(\d+)\./.exec(name);
    if (shape.length !== 2 || name === 'model.embed_tokens.weight') continue;
    if (layer && Number(layer[1]) >= layers) continue;
    n += (shape[0] as number) * (shape[1] as number);
  }
  if (cfg.tieWordEmbeddings) n += cfg.vocabSize * cfg.hiddenSize;
  return n;
}

export function buildLlamaGraph(
  cfg: LlamaConfig,
  weights: ReadonlyMap<string, TensorEntry>,
  files: ReadonlyMap<string, Uint8Array>,
  options: BuildOptions = {},
): BuiltGraph {
  checkWeights(cfg, weights);
  const compute = options.compute ?? 'fp32';
  const weightFormat = options.weights ?? 'float';
  const variant = options.variant ?? 'plain';
  const probe = options.probeLayers;
  const layers = probe ?? cfg.numLayers;
  if (!Number.isInteger(layers) || layers < 1 || layers > cfg.numLayers) {
    throw new RangeError(`probe layers ${layers} must be in [1, ${cfg.numLayers}]`);
  }
  const T: 'float32' | 'float16' = compute === 'fp16' ? 'float16' : 'float32';
  const g = new OnnxGraph(`${cfg.modelType}_${options.interface ?? 'tree'}_${variant}_${weightFormat}_${compute}`);
  g.useDomain('com.microsoft', 1);
  const hostCache = options.hostCache === true;
  if (hostCache && (variant === 'fused' || options.interface === 'transformers')) {
    throw new RangeError(`hostCache needs the MatMul attention of the tree interface, not the ${variant} graph's`);
  }
  if (weightFormat === 'int8' && T !== 'float32') {
    throw new ModelLoadError('int8 weights compute in fp32 (onnxruntime has no fp16 integer matmul): use fp32 compute');
  }
  const totalQuantized = weightFormat === 'float' ? 0 : quantizedElements(cfg, layers);
  const store = new WeightStore(g, weights, files, T, {
    ...(options.weightsFile ? { weightsFile: options.weightsFile } : {}),
    ...(options.int4 ? { int4: options.int4 } : {}),
    ...(options.foldHalfWeights ? { foldHalf: true } : {}),
    onQuantized: (done) => options.onQuantize?.(totalQuantized > 0 ? Math.min(1, done / totalQuantized) : 1),
  });
  const cast = (x: string, to: OnnxDataType) => g.op('Cast', [x], { to: DATA_TYPE_CODE[to] });
  const toT = (x: string) => (T === 'float32' ? x : cast(x, T));
  const inputs =
    options.interface === 'transformers' ? transformersInputs(g, cfg, T) : treeInputs(g, cfg, T, layers, hostCache);

  const matmulNBits = (x: string, w: Int4Initializers) =>
    g.node('MatMulNBits', w.zeroPoints ? [x, w.codes, w.scales, w.zeroPoints] : [x, w.codes, w.scales], {
      domain: 'com.microsoft',
      attrs: { K: w.k, N: w.n, bits: 4, block_size: w.blockSize },
    })[0] as string;
  const int8 = weightFormat === 'int8' ? int8Helpers(g) : null;
  // The per-row zero points of the layers' activations ([q] of 128), made here: a switched body's If branches read it.
  const layerZeroPoints = int8
    ? int8.zeroPoints(g.op('Gather', [g.op('Shape', [inputs.positionIds]), g.constInt64([1])]))
    : '';
  const project = (
    x: string,
    names: readonly string[],
    as: string,
    biases: readonly string[] | undefined,
    zp: string,
  ) => {
    const bias = biases ? store.floatStack(biases, `${as}.bias`) : null;
    if (weightFormat === 'float') {
      const w = store.floatStack(names, as);
      return g.op('Gemm', bias ? [x, w, bias] : [x, w], { transB: 1 });
    }
    const y = int8 ? int8.matmul(x, store.int8(names, as), zp) : matmulNBits(x, store.int4(names, as));
    return bias ? g.op('Add', [y, bias]) : y;
  };
  const linear = (x: string, names: readonly string[], as: string, biases?: readonly string[]) =>
    project(x, names, as, biases, layerZeroPoints);
  // The ids are gathered as they come ([1, q]) and the rows flattened after: the ids' only reader is then the Gather,
  // a GPU kernel, so on WebGPU they can be fed from a GPU buffer (a Reshape of the ids would run on the CPU and make
  // onnxruntime download them; model/gpu-feeds.ts). The graph's shape arithmetic reads the positions instead.
  const embed = (ids: string) => {
    const H = cfg.hiddenSize;
    const flat = (rows: string) => g.op('Reshape', [rows, g.constInt64([-1, H])]);
    if (weightFormat === 'float')
      return flat(g.op('Gather', [store.float('model.embed_tokens.weight'), ids], { axis: 0 }));
    const type = options.embeddingType ?? 'float16';
    const table = store.float('model.embed_tokens.weight', type, `model.embed_tokens.weight.${type}`);
    const rows = flat(g.op('Gather', [table, ids], { axis: 0 }));
    return type === T ? rows : cast(rows, T);
  };
  let angles: string | null = null;
  const ropeAngles = () => {
    if (angles) return angles;
    const hd = cfg.headDim;
    const pos = inputs.ropePositions ?? g.op('Reshape', [cast(inputs.positionIds, 'float32'), g.constInt64([-1, 1])]);
    angles = g.op('Mul', [pos, g.constFloat32(ropeInvFreq(cfg), [1, hd / 2], 'inv_freq')]);
    return angles;
  };
  const layerSwitches = options.layerSwitches === true;
  const layerInputs = new Map<number, string>();
  const wanted = new Set<number>(
    options.hidden === 'eagle3' ? eagle3Layers(cfg.numLayers) : options.hidden === 'last' ? [layers] : [],
  );
  const layerInput = (i: number, x: string) => {
    if (wanted.has(i)) layerInputs.set(i, x);
  };
  const ctx: GraphContext = {
    g,
    cfg,
    store,
    T,
    weightFormat,
    layers,
    inputs,
    cast,
    toT,
    linear,
    embed,
    hostCache,
    ropeAngles,
    layerSwitches,
    rowInvariant: options.rowInvariantAttention ?? weightFormat === 'int8',
    layerInput,
  };

  // The body: [rows, H], the final-normed hidden state of the requested rows.
  const normed =
    variant === 'plain' ? buildPlainBody(ctx) : buildFusedBody(ctx, variant === 'fused' ? 'gqa' : 'matmul');
  if (hostCache) joinNewRows(ctx);

  if (options.hidden) {
    const rows = g.input(HIDDEN_ROWS, 'int64', ['hrows']);
    const pick = (i: number) => {
      const x = layerInputs.get(i);
      if (!x) throw new Error(`graph: the body did not report the input of layer ${i}`);
      return g.op('Gather', [x, rows], { axis: 0 });
    };
    const toF32 = (x: string) => (T === 'float32' ? x : cast(x, 'float32'));
    if (options.hidden === 'last') {
      const xf = toF32(pick(layers));
      const ms = g.op('ReduceMean', [g.op('Mul', [xf, xf])], { axes: [-1], keepdims: 1 });
      const inv = g.op('Div', [xf, g.op('Sqrt', [g.op('Add', [ms, g.constFloat32([cfg.rmsNormEps], [], 'eps')])])]);
      g.op('Mul', [inv, toF32(store.float('model.norm.weight'))], {}, GRAPH_OUTPUTS.hidden);
      g.output(GRAPH_OUTPUTS.hidden, 'float32', ['hrows', cfg.hiddenSize]);
    } else {
      const parts = eagle3Layers(cfg.numLayers).map((i) => toF32(pick(i)));
      g.op('Concat', parts, { axis: -1 }, GRAPH_OUTPUTS.hiddenEagle3);
      g.output(GRAPH_OUTPUTS.hiddenEagle3, 'float32', ['hrows', 3 * cfg.hiddenSize]);
    }
  }

  if (probe !== undefined) {
    g.op('Identity', [normed], {}, 'hidden');
    g.output('hidden', T, ['rows', cfg.hiddenSize]);
  } else {
    const head = cfg.tieWordEmbeddings ? 'model.embed_tokens.weight' : 'lm_head.weight';
    const headZeroPoints =
      int8 && inputs.logitsRows ? int8.zeroPoints(g.op('Shape', [inputs.logitsRows])) : layerZeroPoints;
    let logits =
      weightFormat === 'float'
        ? g.op('Gemm', [normed, store.float(head)], { transB: 1 })
        : project(normed, [head], 'lm_head', undefined, headZeroPoints);
    if (T !== 'float32') logits = cast(logits, 'float32');
    g.op('Unsqueeze', [logits, g.constInt64([0])], {}, GRAPH_OUTPUTS.logits);
    g.output(GRAPH_OUTPUTS.logits, 'float32', [1, inputs.logitsRows ? 'rows' : 'q', cfg.vocabSize]);
    if (options.interface !== 'transformers') {
      g.op('ArgMax', [logits], { axis: -1, keepdims: 0 }, GRAPH_OUTPUTS.argmax);
      g.output(GRAPH_OUTPUTS.argmax, 'int64', ['rows']);
      // onnxruntime-web cannot feed an input that has a default (an initializer of the same name), so every call
      // feeds top_k: 1 when it fetches something else.
      g.input(GRAPH_INPUTS.topK, 'int64', [1]);
      g.node('TopK', [logits, GRAPH_INPUTS.topK], {
        attrs: { axis: -1, largest: 1, sorted: 1 },
        outputs: [GRAPH_OUTPUTS.topValues, GRAPH_OUTPUTS.topIds],
      });
      g.output(GRAPH_OUTPUTS.topValues, 'float32', ['rows', 'k']);
      g.output(GRAPH_OUTPUTS.topIds, 'int64', ['rows', 'k']);
    }
  }

  return {
    model: g.toBytes(),
    externalData: store.externalData(),
    compute,
    weightFormat,
    variant,
    layerSwitches,
    hostCache,
    rowInvariantAttention: ctx.rowInvariant && ROW_INVARIANT_VARIANTS.includes(variant),
    convertedBytes: store.convertedBytes,
    weightBytes: callWeightBytes(cfg, weightFormat, compute, layers, options.int4?.blockSize),
    nodes: g.nodeCount,
  };
}

/** Bytes one call reads from the weights (for achieved-bandwidth figures): every projection, norms, the head. */
export function callWeightBytes(
  cfg: LlamaConfig,
  format: WeightFormat,
  compute: ComputeType,
  layers = cfg.numLayers,
  blockSize = 32,
): number {
  const floatBytes = compute === 'fp16' ? 2 : 4;
  let bytes = 0;
  for (const [name, shape] of expectedWeights(cfg)) {
    const layer = /^model\.layers\.(\d+)\./.exec(name);
    if (layer && Number(layer[1]) >= layers) continue;
    const n = shape.reduce((a, b) => a * b, 1);
    if (name === 'model.embed_tokens.weight') continue; // a gather of q rows
    bytes += shape.length === 2 ? matrixBytes(shape[0] as number, n) : n * floatBytes;
  }
  if (cfg.tieWordEmbeddings) bytes += matrixBytes(cfg.vocabSize, cfg.vocabSize * cfg.hiddenSize);
  return bytes;

  function matrixBytes(rows: number, n: number): number {
    if (format === 'int4') return n / 2 + (n / blockSize) * floatBytes;
    if (format === 'int8') return n + rows * 4;
    return n * floatBytes;
  }
}

export interface CoreInputs {
  inputIds: string;
  positionIds: string;
  /** float32 [q, 1], the positions for the rotary angles (null: cast from position_ids in the graph). */
  ropePositions: string | null;
  /** float32 [1, 1, q, total] */
  attentionBias: string;
  /** null: keep the whole past. */
  keepIndices: string | null;
  /** null: logits for every position. */
  logitsRows: string | null;
}

function pastInputs(g: OnnxGraph, cfg: LlamaConfig, T: OnnxDataType, batch: Dim, past: Dim, layers: number): void {
  for (let i = 0; i < layers; i++) {
    g.input(pastKey(i), T, [batch, cfg.numKvHeads, past, cfg.headDim]);
    g.input(pastValue(i), T, [batch, cfg.numKvHeads, past, cfg.headDim]);
  }
}

function treeInputs(g: OnnxGraph, cfg: LlamaConfig, T: OnnxDataType, layers: number, hostCache: boolean): CoreInputs {
  const inputs: CoreInputs = {
    inputIds: g.input(GRAPH_INPUTS.inputIds, 'int64', [1, 'q']),
    positionIds: g.input(GRAPH_INPUTS.positionIds, 'int64', [1, 'q']),
    ropePositions: g.input(GRAPH_INPUTS.ropePositions, 'float32', ['q', 1]),
    attentionBias: g.input(GRAPH_INPUTS.attentionBias, 'float32', [1, 1, 'q', 'total']),
    keepIndices: hostCache ? null : g.input(GRAPH_INPUTS.keepIndices, 'int64', ['kept']),
    logitsRows: g.input(GRAPH_INPUTS.logitsRows, 'int64', ['rows']),
  };
  if (!hostCache) {
    pastInputs(g, cfg, T, 1, 'past', layers);
    return inputs;
  }
  const { numKvHeads: kvh, headDim: hd } = cfg;
  for (let i = 0; i < layers; i++) {
    g.input(pastKey(i), T, [kvh, 1, hd, 'cap']);
    g.input(pastValue(i), T, [kvh, 1, 'cap', hd]);
  }
  return inputs;
}

/** transformers.js's decoder inputs; the causal (and padding) bias is built in the graph. */
function transformersInputs(g: OnnxGraph, cfg: LlamaConfig, T: OnnxDataType): CoreInputs {
  const inputIds = g.input('input_ids', 'int64', ['batch_size', 'sequence_length']);
  const mask = g.input('attention_mask', 'int64', ['batch_size', 'total_sequence_length']);
  const positionIds = g.input('position_ids', 'int64', ['batch_size', 'sequence_length']);
  pastInputs(g, cfg, T, 'batch_size', 'past_sequence_length', cfg.numLayers);
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
  return { inputIds, positionIds, ropePositions: null, attentionBias, keepIndices: null, logitsRows: null };
}

/**
 * int8 projections (quant.ts: Int8Weight, quantizeActivationRow): each activation row is quantised on its own,
 * scale = max|x| / 127, to uint8 around a zero point of 128 (QuantizeLinear per axis 0), multiplied by the int8
 * weights in onnxruntime's uint8 x int8 kernel (MatMulIntegerToFloat, which applies the weights' per-column scales),
 * then by the row's scale. Per row, not per tensor (DynamicQuantizeMatMul): a row's result must not depend on the
 * other rows of a call, or a tree call would differ from its paths run alone and speculation would not be lossless.
 */
function int8Helpers(g: OnnxGraph) {
  const one = g.constFloat32([1], [], 'int8_one');
  const invRange = g.constFloat32([1 / 127], [], 'int8_inv_range');
  const minScale = g.constFloat32([INT8_MIN_SCALE], [], 'int8_min_scale');
  const flat = g.constInt64([-1]);
  const zp128 = g.initializer({ name: 'int8_zero_point', dataType: 'uint8', dims: [], raw: new Uint8Array([128]) });
  return {
    /** [rows] of 128, from a [1] tensor holding the row count. */
    zeroPoints: (rows: string) => g.op('Expand', [zp128, rows]),
    matmul(x: string, w: Int8Initializers, zeroPoints: string): string {
      const amax = g.op('ReduceMax', [g.op('Abs', [x])], { axes: [-1], keepdims: 1 });
      const scale = g.op('Max', [g.op('Mul', [amax, invRange]), minScale]); // [rows, 1]
      const codes = g.op('QuantizeLinear', [x, g.op('Reshape', [scale, flat]), zeroPoints], { axis: 0 });
      const [y] = g.node('MatMulIntegerToFloat', [codes, w.codes, one, w.scales, zp128], { domain: 'com.microsoft' });
      return g.op('Mul', [y as string, scale]);
    },
  };
}
