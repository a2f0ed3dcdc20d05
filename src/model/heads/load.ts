/**
 * Draft heads trained on a target's own features, read in the layouts their authors publish (the exact keys,
 * shapes and upstream sources are in tools/heads_layouts.md):
 *
 * - Medusa (FasterDecoding/Medusa): config.json with medusa_num_heads / medusa_num_layers, and
 *   medusa_lm_head.safetensors with `{k}.{l}.linear.weight/bias` (ResBlocks) and `{k}.{n}.weight` (the head's own
 *   vocabulary projection). Heads are counted from the tensors (upstream's loader overrides the config's count).
 *   "version 2" heads without a projection are refused with a clear error (not supported yet).
 * - EAGLE-3 (SafeAILab/EAGLE): config.json like the target's with draft_vocab_size, and model.safetensors with
 *   fc.weight [d, 3d], midlayer.* (one decoder layer reading 2d), norm.weight, lm_head.weight [draft_vocab, d], and
 *   d2t / t2d (the draft vocabulary's map to the target's; absent when the vocabularies are the same).
 *   EAGLE-1/2 heads (fc [d, 2d] and layers.0.*) are recognised and refused (not supported yet).
 *
 * Every check names the heads folder and says what does not fit the target.
 */
import type { LlamaConfig } from '../config';
import { ModelLoadError } from '../errors';
import { eagle3Layers } from '../graph/llama';
import { parseSafetensors, type TensorEntry } from '../safetensors';
import { type HubOptions, LoadProgress, type ProgressCallback, readJson, readOptional, resolveSource } from '../source';

export type HeadsKind = 'medusa' | 'eagle3';

export interface Eagle3Shape {
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  intermediateSize: number;
  rmsNormEps: number;
  ropeTheta: number;
  draftVocab: number;
  /** Target token id of each draft token id (identity when the vocabularies are the same). */
  draftToTarget: Int32Array;
}

export interface LoadedHeads {
  spec: string;
  kind: HeadsKind;
  config: Record<string, unknown>;
  weights: Map<string, TensorEntry>;
  files: Map<string, Uint8Array>;
  /** Medusa: the number of heads K and ResBlocks per head. */
  medusa?: { heads: number; layers: number };
  eagle3?: Eagle3Shape;
  weightBytes: number;
}

export interface HeadsLoadOptions {
  onProgress?: ProgressCallback;
  base?: string;
  hub?: HubOptions;
}

const fail = (spec: string, why: string): never => {
  throw new ModelLoadError(`heads model ${spec}: ${why}`);
};

function shapeOf(weights: Map<string, TensorEntry>, name: string): number[] | null {
  return weights.get(name)?.shape ?? null;
}

function expectShape(spec: string, weights: Map<string, TensorEntry>, name: string, shape: number[], what: string) {
  const got = shapeOf(weights, name);
  if (!got) fail(spec, `tensor ${name} is missing`);
  if (got && (got.length !== shape.length || got.some((d, i) => d !== shape[i]))) {
    fail(spec, `${name} has shape [${got.join(', ')}] where ${what} needs [${shape.join(', ')}]`);
  }
}

function checkMedusa(spec: string, target: LlamaConfig, weights: Map<string, TensorEntry>): LoadedHeads['medusa'] {
  const d = target.hiddenSize;
  let heads = 0;
  while (weights.has(`${heads}.0.linear.weight`)) heads++;
  if (heads === 0) fail(spec, 'no Medusa heads in medusa_lm_head.safetensors (no 0.0.linear.weight)');
  // A head missing in the middle (heads 0 and 2 there, not 1) ran the heads before it alone, without a word.
  const present = [...weights.keys()].flatMap((n) => /^(\d+)\.0\.linear\.weight$/.exec(n)?.[1] ?? []).map(Number);
  const last = Math.max(...present);
  if (last >= heads)
    fail(spec, `head ${heads}'s tensors (${heads}.0.linear.weight) are missing, where head ${last}'s are there`);
  let layers = 0;
  while (weights.has(`0.${layers}.linear.weight`)) layers++;
  const first = shapeOf(weights, '0.0.linear.weight') as number[];
  if (first[1] !== d) fail(spec, `hidden size ${first[1]} does not match the target's ${d}`);
  for (let k = 0; k < heads; k++) {
    for (let l = 0; l < layers; l++) {
      expectShape(spec, weights, `${k}.${l}.linear.weight`, [d, d], "the target's hidden size");
      expectShape(spec, weights, `${k}.${l}.linear.bias`, [d], "the target's hidden size");
    }
    const projection = shapeOf(weights, `${k}.${layers}.weight`);
    if (!projection) {
      fail(
        spec,
        `head ${k} has no vocabulary projection (${k}.${layers}.weight): Medusa-2 heads are not supported yet`,
      );
    } else if (projection[0] !== target.vocabSize) {
      fail(spec, `vocabulary of ${projection[0]} tokens does not match the target's ${target.vocabSize}`);
    } else expectShape(spec, weights, `${k}.${layers}.weight`, [target.vocabSize, d], "the target's vocabulary");
  }
  return { heads, layers };
}

function checkEagle3(
  spec: string,
  target: LlamaConfig,
  config: Record<string, unknown>,
  weights: Map<string, TensorEntry>,
  files: Map<string, Uint8Array>,
): Eagle3Shape {
  const d = target.hiddenSize;
  const int = (key: string, fallback?: number) => {
    const v = config[key] ?? fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1)
      fail(spec, `config.json: "${key}" must be a positive whole number`);
    return v as number;
  };
  const hidden = int('hidden_size');
  if (hidden !== d) fail(spec, `hidden size ${hidden} does not match the target's ${d}`);
  if (config.target_hidden_size !== undefined && config.target_hidden_size !== d)
    fail(spec, `target_hidden_size ${String(config.target_hidden_size)} does not match the target's ${d}`);
  const numHeads = int('num_attention_heads');
  const numKvHeads = int('num_key_value_heads', numHeads);
  const headDim = d / numHeads;
  if (!Number.isInteger(headDim) || headDim % 2 !== 0) fail(spec, `head size ${headDim} must be an even whole number`);
  const intermediateSize = int('intermediate_size');
  const draftVocab = int('draft_vocab_size', target.vocabSize);
  expectShape(spec, weights, 'fc.weight', [d, 3 * d], 'three target features');
  const m = 'midlayer';
  for (const n of ['hidden_norm', 'input_layernorm', 'post_attention_layernorm'])
    expectShape(spec, weights, `${m}.${n}.weight`, [d], 'the hidden size');
  expectShape(spec, weights, `${m}.self_attn.q_proj.weight`, [numHeads * headDim, 2 * d], 'the attention');
  expectShape(spec, weights, `${m}.self_attn.k_proj.weight`, [numKvHeads * headDim, 2 * d], 'the attention');
  expectShape(spec, weights, `${m}.self_attn.v_proj.weight`, [numKvHeads * headDim, 2 * d], 'the attention');
  expectShape(spec, weights, `${m}.self_attn.o_proj.weight`, [d, numHeads * headDim], 'the attention');
  expectShape(spec, weights, `${m}.mlp.gate_proj.weight`, [intermediateSize, d], 'the MLP');
  expectShape(spec, weights, `${m}.mlp.up_proj.weight`, [intermediateSize, d], 'the MLP');
  expectShape(spec, weights, `${m}.mlp.down_proj.weight`, [d, intermediateSize], 'the MLP');
  expectShape(spec, weights, 'norm.weight', [d], 'the hidden size');
  expectShape(spec, weights, 'lm_head.weight', [draftVocab, d], 'draft_vocab_size');
  // d2t: target id = draft id + d2t[draft id]; absent means the draft vocabulary is the target's.
  const draftToTarget = new Int32Array(draftVocab);
  const d2t = weights.get('d2t');
  if (d2t) {
    if (d2t.dtype !== 'I64' || d2t.shape.length !== 1 || d2t.shape[0] !== draftVocab)
      fail(spec, `d2t must be I64 [${draftVocab}], found ${d2t.dtype} [${d2t.shape.join(', ')}]`);
    const bytes = files.get(d2t.file) as Uint8Array;
    const view = new DataView(bytes.buffer, bytes.byteOffset + d2t.offset, d2t.byteLength);
    for (let i = 0; i < draftVocab; i++) draftToTarget[i] = i + Number(view.getBigInt64(8 * i, true));
  } else {
    if (draftVocab !== target.vocabSize)
      fail(
        spec,
        `draft_vocab_size ${draftVocab} differs from the target's ${target.vocabSize} and there is no d2t map`,
      );
    for (let i = 0; i < draftVocab; i++) draftToTarget[i] = i;
  }
  const seen = new Uint8Array(target.vocabSize);
  draftToTarget.forEach((t, i) => {
    if (!(t >= 0 && t < target.vocabSize))
      fail(spec, `d2t maps to token ${t}, outside the target's vocabulary of ${target.vocabSize}`);
    if (seen[t]) fail(spec, `d2t maps draft index ${i} to token ${t}, which an earlier draft index already has`);
    seen[t] = 1;
  });
  // Absent: upstream's LlamaConfig defaults (tools/heads_layouts.md); transformers 5 keeps rope_theta in
  // rope_parameters. Present, they must make sense: a bad value was replaced without a word, where the target's
  // config is refused for the same.
  const rope =
    config.rope_parameters !== null && typeof config.rope_parameters === 'object'
      ? (config.rope_parameters as Record<string, unknown>)
      : config;
  const positive = (from: Record<string, unknown>, key: string, fallback: number): number => {
    const v = from[key];
    if (v === undefined || v === null) return fallback;
    if (typeof v !== 'number' || !(v > 0) || !Number.isFinite(v))
      fail(spec, `config.json: "${key}" must be a positive number, found ${JSON.stringify(v)}`);
    return v as number;
  };
  const ropeTheta = positive(rope, 'rope_theta', 10000);
  const rmsNormEps = positive(config, 'rms_norm_eps', 1e-6);
  // The layers whose features the head was trained on, where its config names them (SpecForge writes them; SGLang
  // reads them): their numbering is of layer outputs, so the inputs of layers 2, L/2 and L-3, which this engine
  // feeds it, read [1, L/2 - 1, L - 4] (vLLM's own default numbers the inputs: [2, L/2, L - 3], accepted too). A head
  // trained on other layers was fed features it never saw.
  const aux = (config.eagle_config as { eagle_aux_hidden_state_layer_ids?: unknown } | undefined)
    ?.eagle_aux_hidden_state_layer_ids;
  const fed = eagle3Layers(target.numLayers);
  const same = (ids: unknown, shift: number) =>
    Array.isArray(ids) && ids.length === fed.length && ids.every((id, i) => id + shift === fed[i]);
  if (aux !== undefined && aux !== null && !same(aux, 1) && !same(aux, 0))
    fail(
      spec,
      `eagle_config.eagle_aux_hidden_state_layer_ids ${JSON.stringify(aux)}: the head was trained on other layers than those fed to it (the inputs of layers ${fed.join(', ')}: outputs ${fed.map((l) => l - 1).join(', ')}), which is not supported yet`,
    );
  return { numHeads, numKvHeads, headDim, intermediateSize, rmsNormEps, ropeTheta, draftVocab, draftToTarget };
}

/** Load a heads folder (path, URL or hub id) for this target, and check it fits. */
export async function loadHeads(
  spec: string,
  target: LlamaConfig,
  options: HeadsLoadOptions = {},
): Promise<LoadedHeads> {
  if (typeof spec !== 'string' || spec.trim() === '') throw new ModelLoadError('heads: no folder or hub id given');
  const progress = new LoadProgress(spec, options.onProgress);
  const source = resolveSource(spec, options.base, options.hub, (message) => progress.warn(message));
  const config = (await readJson(source, 'config.json', false, progress)) as Record<string, unknown> | null;
  if (!config) fail(spec, `missing file: config.json not found in ${source.location}`);
  // Ask for the file the config points to first (Medusa's config has medusa_num_heads), so a browser sees no 404.
  const medusaFirst = 'medusa_num_heads' in (config as Record<string, unknown>);
  let medusa: Uint8Array | null = null;
  let eagle: Uint8Array | null = null;
  if (medusaFirst) medusa = await readOptional(source, 'medusa_lm_head.safetensors', progress);
  if (!medusa) eagle = await readOptional(source, 'model.safetensors', progress);
  if (!medusa && !eagle && !medusaFirst) medusa = await readOptional(source, 'medusa_lm_head.safetensors', progress);
  if (!medusa && !eagle) {
    fail(
      spec,
      `missing file: neither medusa_lm_head.safetensors (Medusa) nor model.safetensors (EAGLE) in ${source.location}`,
    );
  }
  const file = medusa ? 'medusa_lm_head.safetensors' : 'model.safetensors';
  const bytes = (medusa ?? eagle) as Uint8Array;
  let tensors: Map<string, TensorEntry>;
  try {
    tensors = parseSafetensors(file, bytes).tensors;
  } catch (e) {
    return fail(spec, (e as Error).message);
  }
  const files = new Map([[file, bytes]]);
  const base = {
    spec,
    config: config as Record<string, unknown>,
    weights: tensors,
    files,
    weightBytes: bytes.byteLength,
  };
  if (medusa)
    return {
      ...base,
      kind: 'medusa',
      medusa: checkMedusa(spec, target, tensors),
    };
  if (tensors.has('midlayer.self_attn.q_proj.weight')) {
    return {
      ...base,
      kind: 'eagle3',
      eagle3: checkEagle3(spec, target, config as Record<string, unknown>, tensors, files),
    };
  }
  if (tensors.has('fc.weight') && tensors.has('layers.0.self_attn.q_proj.weight'))
    fail(spec, 'these are EAGLE-1/2 heads (fc.weight and layers.0.*); only EAGLE-3 heads are supported so far');
  return fail(spec, 'model.safetensors holds neither EAGLE-3 heads (midlayer.*) nor Medusa heads');
}
