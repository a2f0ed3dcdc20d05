/**
 * The model layer's public face: load a Hugging Face folder (or hf:org/name when online) and open it as a runner
 * that can prefill, verify a token tree in one call, and compact its cache.
 */
import { ModelLoadError } from './errors';
import { assertSameVocabulary, type LoadedModel, type LoadOptions, loadModel } from './load';
import { ModelRunner, type RunnerOptions } from './runner';

export { parseLlamaConfig } from './config';
export { DownloadError, ModelLoadError } from './errors';
export { type ComputeType, type GraphVariant, MASKED } from './graph/llama';
export { assertSameVocabulary, type LoadedModel, loadModel } from './load';
export { PRECISIONS, type Precision } from './precision';
export { ContextLimitError, type Device, type ForwardInput, ModelRunner } from './runner';
export type { HubOptions, ProgressCallback, ProgressInfo } from './source';

type Ort = Parameters<typeof ModelRunner.create>[0];

export interface OpenOptions extends LoadOptions, Omit<RunnerOptions, 'onProgress'> {}

/** The runner options of one model: layer switches are the target's alone (a draft never skips its layers). */
function runnerOptions(o: OpenOptions, role: ModelRole = 'target'): RunnerOptions {
  const { device, precision, compute, int4, graph, onProgress, layerSwitches } = o;
  return {
    device,
    ...(layerSwitches && role === 'target' ? { layerSwitches } : {}),
    ...(precision ? { precision } : {}),
    ...(compute ? { compute } : {}),
    ...(int4 ? { int4 } : {}),
    ...(graph ? { graph } : {}),
    ...(onProgress ? { onProgress } : {}),
  };
}

/** Which model an error is about (users load a target, a draft and heads side by side). */
export type ModelRole = 'target' | 'draft' | 'heads';

/** Prefix a model error with the role and location of the model, so it says which one is broken. */
export async function asRole<T>(role: ModelRole, spec: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (e) {
    if (!(e instanceof ModelLoadError) || e.message.startsWith(`${role} model`)) throw e;
    const named = new (e.constructor as new (m: string) => ModelLoadError)(`${role} model ${spec}: ${e.message}`);
    named.stack = e.stack;
    throw named;
  }
}

/** Load a model folder and build its session on `device`. */
export async function openModel(
  ort: Ort,
  spec: string,
  options: OpenOptions,
  role: ModelRole = 'target',
): Promise<ModelRunner> {
  return asRole(role, spec, async () =>
    ModelRunner.create(ort, await loadModel(spec, options), runnerOptions(options, role)),
  );
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
    asRole('target', specs.target, () => loadModel(specs.target, options)),
    asRole('draft', specs.draft, () => loadModel(specs.draft, options)),
  ]);
  assertSameVocabulary(targetModel as LoadedModel, draftModel as LoadedModel);
  const target = await asRole('target', specs.target, () =>
    ModelRunner.create(ort, targetModel as LoadedModel, runnerOptions(options)),
  );
  try {
    const draft = await asRole('draft', specs.draft, () =>
      ModelRunner.create(ort, draftModel as LoadedModel, runnerOptions(options, 'draft')),
    );
    return { target, draft };
  } catch (e) {
    await target.release();
    throw e;
  }
}
