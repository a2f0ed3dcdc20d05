/** The names in the graph's signature (inputs, outputs, the cache), shared by the builders and the runner. */

export const GRAPH_INPUTS = {
  inputIds: 'input_ids',
  positionIds: 'position_ids',
  /**
   * float32 [q, 1]: the same positions as floats, for the rotary angles. A graph input of its own so that on WebGPU no
   * CPU kernel computes them (onnxruntime would upload its result every call); position_ids is then read for its
   * shape only.
   */
  ropePositions: 'rope_positions',
  attentionBias: 'attention_bias',
  keepIndices: 'keep_indices',
  logitsRows: 'logits_rows',
  /** int64 [1]: how many of each row's largest logits top_values/top_ids hold (1 when they are not fetched). */
  topK: 'top_k',
} as const;

export const GRAPH_OUTPUTS = {
  logits: 'logits',
  argmax: 'argmax',
  /** Each requested row's top_k largest logits, largest first (ties: lower id first), [rows, top_k]. */
  topValues: 'top_values',
  /** Their token ids, int64 [rows, top_k]. */
  topIds: 'top_ids',
  /** Graphs built with hidden 'last': the final-normed hidden state of the hidden_rows, [hrows, H]. */
  hidden: 'hidden_states',
  /** Graphs built with hidden 'eagle3': inputs of layers 2, L/2 and L-3 of the hidden_rows, [hrows, 3H]. */
  hiddenEagle3: 'hidden_states_eagle3',
} as const;

/** Which rows the hidden-state outputs cover (graphs built with hidden states). */
export const HIDDEN_ROWS = 'hidden_rows';

export const pastKey = (i: number) => `past_key_values.${i}.key`;
export const pastValue = (i: number) => `past_key_values.${i}.value`;
export const presentKey = (i: number) => `present.${i}.key`;
export const presentValue = (i: number) => `present.${i}.value`;
/**
 * Graphs built with hostCache: this call's keys and values of layer i alone, laid out as the caller's cache holds
 * them (keys transposed [kvh, 1, hd, q], values [kvh, 1, q, hd]); past_key_values.{i}.* come in the same layouts.
 * Values inside the graph: what goes out is NEW_KV.
 */
export const newKey = (i: number) => `new.${i}.key`;
export const newValue = (i: number) => `new.${i}.value`;
/**
 * Graphs built with hostCache: every layer's new.{i}.key and new.{i}.value flattened and joined in one output, layer
 * by layer, keys first ([layers x 2 x kvh x hd x q]). onnxruntime-web's wasm API handles each output on its own (its
 * data read back, a tensor made): one output for all layers instead of two per layer.
 */
export const NEW_KV = 'new_kv';

/**
 * Layer switches (graphs built with layerSwitches): a scalar bool per sub-layer of every decoder layer but the first
 * and the last; false skips it (self-speculation runs the target with some of them off).
 */
export const runAttention = (i: number) => `run_attention.${i}`;
export const runMlp = (i: number) => `run_mlp.${i}`;
