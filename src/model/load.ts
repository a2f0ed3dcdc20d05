/**
 * Loading a Hugging Face model folder: config.json, generation_config.json, model.safetensors (or shards listed in
 * model.safetensors.index.json), tokenizer.json and tokenizer_config.json.
 */
import { type LlamaConfig, parseLlamaConfig } from './config';
import { ModelLoadError } from './errors';
import { checkWeights } from './graph/llama';
import { firstNonFinite, parseSafetensors, type TensorEntry } from './safetensors';
import {
  type FileSource,
  type HubOptions,
  LoadProgress,
  type ProgressCallback,
  readJson,
  readOptional,
  readRequired,
  readText,
  resolveSource,
} from './source';
import { type TextTokenizer, tokenizerFromFiles } from './tokenizer';

export interface LoadedModel {
  /** The spec the model was loaded from (folder, URL or hf:org/name). */
  spec: string;
  source: FileSource;
  config: LlamaConfig;
  generationConfig: Record<string, unknown> | null;
  /** Every tensor of the checkpoint, pointing into `files`. */
  weights: Map<string, TensorEntry>;
  /** safetensors bytes by file name, unchanged (the graph references them as external data). */
  files: Map<string, Uint8Array>;
  tokenizer: TextTokenizer;
  /** tokenizer.json's model.vocab, to compare vocabularies between target and draft. */
  vocab: Record<string, number>;
  /** Bytes of all weight files. */
  weightBytes: number;
  /** config.json's acceptance_prior, as written (engine/priors.ts reads it; undefined: none). */
  acceptancePrior?: unknown;
}

export interface LoadOptions {
  onProgress?: ProgressCallback;
  /** Base URL for relative folders in the browser (default: the page). */
  base?: string;
  /** For `hf:` ids: the hub endpoint, token and cache. */
  hub?: HubOptions;
}

async function readWeights(source: FileSource, progress: LoadProgress) {
  const files = new Map<string, Uint8Array>();
  const weights = new Map<string, TensorEntry>();
  const add = (file: string, bytes: Uint8Array) => {
    files.set(file, bytes);
    for (const [name, entry] of parseSafetensors(file, bytes).tensors) weights.set(name, entry);
  };
  // A single model.safetensors is the common case; only without it look for a sharded index.
  progress.expect('model.safetensors', await source.size?.('model.safetensors'));
  const single = await readOptional(source, 'model.safetensors', progress);
  if (single) {
    add('model.safetensors', single);
    return { files, weights };
  }
  const index = await readJson(source, 'model.safetensors.index.json', false, progress);
  if (!index) {
    throw new ModelLoadError(
      `missing file: neither model.safetensors nor model.safetensors.index.json found in ${source.location}`,
    );
  }
  const shardNames = [...new Set(Object.values((index.weight_map ?? {}) as Record<string, string>))];
  if (shardNames.length === 0)
    throw new ModelLoadError(`model.safetensors.index.json in ${source.location} lists no files`);
  for (const file of shardNames) progress.expect(file, await source.size?.(file));
  for (const file of shardNames) add(file, await readRequired(source, file, progress));
  return { files, weights };
}

/**
 * Draft heads are loaded beside a target, never as a model: a heads folder given as the target or the draft is named
 * as what it is (an EAGLE-3 head's config.json is a one-layer Llama's plus draft_vocab_size, and would otherwise fail
 * later, on a tokenizer it does not ship).
 */
function refuseHeads(raw: Record<string, unknown>): void {
  const kind =
    'medusa_num_heads' in raw
      ? 'Medusa heads (config.json has medusa_num_heads)'
      : 'draft_vocab_size' in raw
        ? 'an EAGLE-3 head (config.json has draft_vocab_size)'
        : null;
  if (kind) throw new ModelLoadError(`this folder holds ${kind}, not a language model: load it as heads`);
}

export async function loadModel(spec: string, options: LoadOptions = {}): Promise<LoadedModel> {
  if (typeof spec !== 'string' || spec.trim() === '') throw new ModelLoadError('no folder or hub id given');
  const progress = new LoadProgress(spec, options.onProgress);
  const source = resolveSource(spec, options.base, options.hub, (message) => progress.warn(message));
  const rawConfig = await readJson(source, 'config.json', true, progress);
  let config: LlamaConfig;
  try {
    refuseHeads(rawConfig);
    config = parseLlamaConfig(rawConfig);
  } catch (e) {
    throw new ModelLoadError(`${source.location}: ${(e as Error).message}`);
  }
  const generationConfig = await readJson(source, 'generation_config.json', false, progress);
  const tokenizerText = await readText(source, 'tokenizer.json', true, progress);
  const tokenizerConfigText = await readText(source, 'tokenizer_config.json', false, progress);
  const { tokenizer, vocab } = tokenizerFromFiles(tokenizerText, tokenizerConfigText, source.location);
  const { files, weights } = await readWeights(source, progress);
  try {
    checkWeights(config, weights);
  } catch (e) {
    throw new ModelLoadError(`${source.location}: ${(e as Error).message}`);
  }
  for (const t of weights.values()) {
    const at = firstNonFinite(files.get(t.file) as Uint8Array, t);
    if (at >= 0) {
      throw new ModelLoadError(
        `${source.location}: ${t.file}: tensor ${t.name} holds a NaN or infinite value at element ${at} (the file is corrupt)`,
      );
    }
  }
  if (tokenizer.size > config.vocabSize) {
    throw new ModelLoadError(
      `${source.location}: tokenizer has ${tokenizer.size} tokens but config.json vocab_size is ${config.vocabSize}`,
    );
  }
  // generation_config.json's end-of-sequence ids win over config.json's, as in transformers.
  const eos = generationConfig?.eos_token_id;
  if (typeof eos === 'number') config.eosTokenIds = [eos];
  else if (Array.isArray(eos)) config.eosTokenIds = eos.filter((x): x is number => typeof x === 'number');
  let weightBytes = 0;
  for (const bytes of files.values()) weightBytes += bytes.byteLength;
  return {
    spec,
    source,
    config,
    generationConfig,
    weights,
    files,
    tokenizer,
    vocab,
    weightBytes,
    ...(rawConfig.acceptance_prior !== undefined ? { acceptancePrior: rawConfig.acceptance_prior } : {}),
  };
}

/** A draft must speak the target's vocabulary token for token; otherwise its proposals mean nothing. */
export function assertSameVocabulary(target: LoadedModel, draft: LoadedModel): void {
  const where = `draft ${draft.spec} vs target ${target.spec}`;
  const tv = target.vocab;
  const dv = draft.vocab;
  const tk = Object.keys(tv);
  const dk = Object.keys(dv);
  if (tk.length !== dk.length) {
    throw new ModelLoadError(`vocabulary mismatch (${where}): ${dk.length} vs ${tk.length} tokens in tokenizer.json`);
  }
  for (const token of tk) {
    if (dv[token] !== tv[token]) {
      throw new ModelLoadError(
        `vocabulary mismatch (${where}): token ${JSON.stringify(token)} is id ${tv[token]} in the target, ${dv[token] ?? 'absent'} in the draft`,
      );
    }
  }
}
