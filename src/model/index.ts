/**
 * The model layer's public face: load a Hugging Face folder (or hf:org/name when online) and open it as a runner
 * that can prefill, verify a token tree in one call, and compact its cache.
 */
import { assertSameVocabulary, type LoadedModel, type LoadOptions, loadModel } from './load';
import { ModelRunner, type RunnerOptions } from './runner';

export { parseLlamaConfig } from './config';
export { DownloadError, ModelLoadError } from './errors';
export { type ComputeType, MASKED } from './graph/llama';
export { assertSameVocabulary, type LoadedModel, loadModel } from './load';
export { ContextLimitError, type Device, type ForwardInput, ModelRunner } from './runner';
export type { HubOptions, ProgressCallback, ProgressInfo } from './source';

type Ort = Parameters<typeof ModelRunner.create>[0];

export interface OpenOptions extends LoadOptions, Omit<RunnerOptions, 'onProgress'> {}

function runnerOptions({ device, compute, onProgress }: OpenOptions): RunnerOptions {
  return { device, ...(compute ? { compute } : {}), ...(onProgress ? { onProgress } : {}) };
}

/** Load a model folder and build its session on `device`. */
export async function openModel(ort: Ort, spec: string, options: OpenOptions): Promise<ModelRunner> {
  return ModelRunner.create(ort, await loadModel(spec, options), runnerOptions(options));
}

export interface ModelPair {
  target: ModelRunner;
  draft: ModelRunner;
}

/** Load a target and a draft that share a vocabulary (refused with a clear error otherwise). */
export async function openPair(
  ort: Ort,
  specs: { target: string; draft: string },
  options: OpenOptions,
): Promise<ModelPair> {
  const [targetModel, draftModel]: LoadedModel[] = await Promise.all([
    loadModel(specs.target, options),
    loadModel(specs.draft, options),
  ]);
  assertSameVocabulary(targetModel as LoadedModel, draftModel as LoadedModel);
  const target = await ModelRunner.create(ort, targetModel as LoadedModel, runnerOptions(options));
  try {
    return { target, draft: await ModelRunner.create(ort, draftModel as LoadedModel, runnerOptions(options)) };
  } catch (e) {
    await target.release();
    throw e;
  }
}
