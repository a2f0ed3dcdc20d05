/**
 * The short probe graph both device measurements time: the model's first two layers (real widths, real weights, no
 * head) in one graph variant, and its calls as plain typed arrays (so they can be handed to a worker): a context of
 * CONTEXT tokens, then calls of q tokens that keep that context as their past. Per-layer cost is what the graph
 * variants (variant.ts) and the wasm thread counts (runtime/thread-probe.ts) differ in, so the probe's ratios are
 * the full model's, at a fraction of the memory and time.
 */
import { chainBias, positionIds, treeAttentionBias } from '../engine/tree';
import { int64s } from './gpu-feeds';
import { buildLlamaGraph, type ComputeType, type GraphVariant, type WeightFormat } from './graph/llama';
import { GRAPH_INPUTS, pastKey, pastValue, presentKey, presentValue } from './graph/signature';
import type { LoadedModel } from './load';

export const PROBE_LAYERS = 2;
export const PROBE_CONTEXT = 32;
/** The verify-sized call every probe times beside a one-token call. */
export const PROBE_WIDE = 16;
/**
 * The call that checks a variant's results against the plain graph's (variant.ts): a branching tree past EAGLE's
 * largest (64 nodes) and past 32 tokens, where onnxruntime's GroupQueryAttention went wrong on WebGPU adapters with
 * 4- and 8-wide subgroups.
 */
export const PROBE_CHECK = 72;

/** One input as data: what an ort.Tensor is made from, and what a worker can be sent. */
export interface FeedSpec {
  type: 'int64' | 'float32' | 'float16';
  data: BigInt64Array | Float32Array | Uint16Array;
  dims: number[];
}

export interface ProbeGraph {
  model: Uint8Array;
  externalData: { path: string; data: Uint8Array }[];
  layers: number;
  /** The context call's inputs (an empty past). */
  context: Record<string, FeedSpec>;
  /** A timed call of q tokens (the past inputs are the context call's outputs, named by `carry`). */
  call: (q: number) => Record<string, FeedSpec>;
  /** [output of the context call, input of every timed call] pairs: the past each timed call keeps. */
  carry: [string, string][];
  /** A branching tree of PROBE_CHECK nodes after the context, every row's output asked for (keeps the same past). */
  check: Record<string, FeedSpec>;
}

export interface ProbePrecision {
  weights: WeightFormat;
  compute: ComputeType;
  /** The attention's row-invariant form (BuildOptions.rowInvariantAttention); default as the full graph's. */
  rowInvariant?: boolean;
}

/**
 * @param whole the whole model (every layer and the LM head, one row of logits out) instead of its first two
 *   layers: for measurements where the head's cost matters as much as a layer's (a small draft model's call)
 */
export function buildProbeGraph(
  model: LoadedModel,
  precision: ProbePrecision,
  variant: GraphVariant,
  embeddingType?: 'float16' | 'float32',
  whole = false,
): ProbeGraph {
  const cfg = model.config;
  const layers = whole ? cfg.numLayers : Math.min(PROBE_LAYERS, cfg.numLayers);
  const graph = buildLlamaGraph(cfg, model.weights, model.files, {
    compute: precision.compute,
    weights: precision.weights,
    variant,
    ...(precision.rowInvariant !== undefined ? { rowInvariantAttention: precision.rowInvariant } : {}),
    ...(whole ? {} : { probeLayers: layers }),
    ...(embeddingType ? { embeddingType } : {}),
  });
  const int64 = (v: number[]): FeedSpec => ({
    type: 'int64',
    data: int64s(v),
    dims: [1, v.length],
  });
  // position_ids (read for its shape) and the same positions as floats (the rotary angles).
  const positionFeeds = (p: number[]): Record<string, FeedSpec> => ({
    [GRAPH_INPUTS.positionIds]: int64(p),
    [GRAPH_INPUTS.ropePositions]: { type: 'float32', data: Float32Array.from(p), dims: [p.length, 1] },
  });
  const tokens = (n: number, at: number) => Array.from({ length: n }, (_, i) => (at + i * 7919) % cfg.vocabSize);
  const positions = (n: number, from: number) => Array.from({ length: n }, (_, i) => from + i);
  const bias = (past: number, q: number): FeedSpec => ({
    type: 'float32',
    data: chainBias(past, q),
    dims: [1, 1, q, past + q],
  });
  const empty = (): FeedSpec => ({
    type: precision.compute === 'fp16' ? 'float16' : 'float32',
    data: precision.compute === 'fp16' ? new Uint16Array(0) : new Float32Array(0),
    dims: [1, cfg.numKvHeads, 0, cfg.headDim],
  });
  // The whole graph's top-k output needs its k (1: nothing reads it here); the layers-only graph has no logits.
  const topK: Record<string, FeedSpec> = whole
    ? { [GRAPH_INPUTS.topK]: { type: 'int64', data: BigInt64Array.of(1n), dims: [1] } }
    : {};
  const context: Record<string, FeedSpec> = {
    ...topK,
    [GRAPH_INPUTS.inputIds]: int64(tokens(PROBE_CONTEXT, 1)),
    ...positionFeeds(positions(PROBE_CONTEXT, 0)),
    [GRAPH_INPUTS.attentionBias]: bias(0, PROBE_CONTEXT),
    [GRAPH_INPUTS.keepIndices]: { ...int64([]), dims: [0] },
    [GRAPH_INPUTS.logitsRows]: { ...int64([PROBE_CONTEXT - 1]), dims: [1] },
  };
  const carry: [string, string][] = [];
  for (let i = 0; i < layers; i++) {
    context[pastKey(i)] = empty();
    context[pastValue(i)] = empty();
    carry.push([presentKey(i), pastKey(i)], [presentValue(i), pastValue(i)]);
  }
  const keep = positions(PROBE_CONTEXT, 0);
  const call = (q: number): Record<string, FeedSpec> => ({
    ...topK,
    [GRAPH_INPUTS.inputIds]: int64(tokens(q, 5)),
    ...positionFeeds(positions(q, PROBE_CONTEXT)),
    [GRAPH_INPUTS.attentionBias]: bias(PROBE_CONTEXT, q),
    [GRAPH_INPUTS.keepIndices]: { ...int64(keep), dims: [PROBE_CONTEXT] },
    [GRAPH_INPUTS.logitsRows]: { ...int64([q - 1]), dims: [1] },
  });
  // Each node under a pseudo-random earlier one (a fixed tree: every variant gets the same call).
  const parents = Array.from({ length: PROBE_CHECK }, (_, i) => (i === 0 ? -1 : ((i * 2654435761) % 2 ** 32) % i));
  const check: Record<string, FeedSpec> = {
    ...topK,
    [GRAPH_INPUTS.inputIds]: int64(tokens(PROBE_CHECK, 11)),
    ...positionFeeds(positionIds(PROBE_CONTEXT, parents)),
    [GRAPH_INPUTS.attentionBias]: {
      type: 'float32',
      data: treeAttentionBias(PROBE_CONTEXT, parents),
      dims: [1, 1, PROBE_CHECK, PROBE_CONTEXT + PROBE_CHECK],
    },
    [GRAPH_INPUTS.keepIndices]: { ...int64(keep), dims: [PROBE_CONTEXT] },
    [GRAPH_INPUTS.logitsRows]: { ...int64(positions(PROBE_CHECK, 0)), dims: [PROBE_CHECK] },
  };
  return { model: graph.model, externalData: graph.externalData, layers, context, call, carry, check };
}
