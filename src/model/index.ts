/**
 * The model layer's public face: load a Hugging Face folder (or hf:org/name when online) and open it as a runner
 * that can prefill, verify a token tree in one call, and compact its cache.
 */

import { checkBoolean } from '../util/options';
import { choiceKey, type DeviceChoice, isPlacement, openDraftOn, openOnFaster } from './device-choice';
import { ModelLoadError } from './errors';
import { GRAPH_VARIANTS } from './graph/llama';
import { hiddenKindFor, type LoadedHeads, loadHeads, type OpenedHeads, openHeads, timeHeadsCalls } from './heads/index';
import { isNode } from './hub/id';
import { assertSameVocabulary, type LoadedModel, type LoadOptions, loadModel } from './load';
import { ortStartAsked, ortStartMs, startOrt } from './ort-start';
import { PRECISIONS } from './precision';
import { ModelRunner, type RunnerOptions, sessionError } from './runner';

export { parseLlamaConfig } from './config';
export type { DeviceChoice, Placement } from './device-choice';
export { DownloadError, ModelLoadError } from './errors';
export { type ComputeType, type GraphVariant, MASKED } from './graph/llama';
export {
  type HeadsKind,
  type LoadedHeads,
  loadHeads,
  type OpenedHeads,
  timeHeadsCall,
  warmupHeads,
} from './heads/index';
export { assertSameVocabulary, type LoadedModel, loadModel } from './load';
export { PRECISIONS, type Precision } from './precision';
export { ContextLimitError, type Device, type ForwardInput, ModelRunner } from './runner';
export type { HubOptions, ProgressCallback, ProgressInfo } from './source';

type Ort = Parameters<typeof ModelRunner.create>[0];

export interface OpenOptions extends LoadOptions, Omit<RunnerOptions, 'onProgress'> {
  /**
   * Where the draft model runs: 'auto' (the default) measures it next to a WebGPU target on both devices and keeps
   * the faster (device-choice.ts; on wasm targets it runs on wasm). A small model's call on a GPU costs its dispatches
   * (8-17 ms for the bundled draft on an H100, 81 ms on SwiftShader), on the CPU what its weights cost to read (0.3-1
   * ms). On another device than the target's, its precision and graph are that device's defaults ('auto').
   */
  draftDevice?: RunnerOptions['device'] | 'auto';
  /**
   * Where the draft heads run: 'auto' (the default) as the draft model's (timed on both next to a WebGPU target). On
   * wasm they read the target's hidden rows as they come back to the CPU from each call, in fp32.
   */
  headsDevice?: RunnerOptions['device'] | 'auto';
}

/**
 * Refuses a device for the draft model or the heads that is not one, naming the option (the element passes its
 * attributes as they are, and its worker checks them before it knows the target's device).
 */
export function checkPlacement(o: Pick<OpenOptions, 'draftDevice' | 'headsDevice'>): void {
  for (const [option, whose, asked] of [
    ['draftDevice', "the draft model's", o.draftDevice],
    ['headsDevice', "the heads'", o.headsDevice],
  ] as const)
    if (asked !== undefined && !isPlacement(asked))
      throw new RangeError(`${option} "${String(asked)}" (${whose} device) is not one of auto, wasm, webgpu`);
}

/**
 * Refuses a device or graph variant that is not one, naming the option, before anything loads (a device left out or
 * 'auto' got as far as onnxruntime, which answered "could not create a undefined session").
 */
function checkDeviceAndGraph(
  o: Pick<OpenOptions, 'device' | 'graph' | 'precision' | 'compute' | 'exact' | 'layerSwitches'>,
): void {
  if (o.device !== 'wasm' && o.device !== 'webgpu')
    throw new RangeError(
      `device "${String(o.device)}" is not one of wasm, webgpu (a model runs on the device given; EngineClient.load and the element choose one for 'auto')`,
    );
  if (o.graph !== undefined && o.graph !== 'auto' && !(GRAPH_VARIANTS as readonly unknown[]).includes(o.graph))
    throw new RangeError(`graph "${String(o.graph)}" is not one of ${GRAPH_VARIANTS.join(', ')}, auto`);
  checkModelOptions(o);
}

/**
 * Refuses a precision, compute type or flag that is not one, naming the option. The worker calls it before it
 * releases the engine it holds, so that a load refused for a bad option leaves the models loaded before.
 */
export function checkModelOptions(o: Pick<OpenOptions, 'precision' | 'compute' | 'exact' | 'layerSwitches'>): void {
  // An option, not the model: refused before the model's name could be put on it.
  if (o.precision !== undefined && !(PRECISIONS as readonly unknown[]).includes(o.precision))
    throw new RangeError(`precision "${String(o.precision)}" is not one of ${PRECISIONS.join(', ')}`);
  if (o.compute !== undefined && !['fp32', 'fp16', 'auto'].includes(o.compute as string))
    throw new RangeError(`compute "${String(o.compute)}" is not one of fp32, fp16, auto`);
  // A truthy non-boolean started exact decoding's load check without its attention, which then blamed the device.
  checkBoolean('exact', o.exact);
  checkBoolean('layerSwitches', o.layerSwitches);
}

/**
 * Notices for a draft model or heads asked for on WebGPU beside a target on wasm (asked for, or without an adapter):
 * they run on wasm there, which the user should not have to find in the runtime report. The devices are those asked
 * for the models that load (undefined for one that does not); `draftFlag` and `headsFlag` name the options as the
 * user wrote them (the CLI's flags, the element's attributes).
 */
export function placementNotes(
  draftDevice: string | undefined,
  headsDevice: string | undefined,
  draftFlag: string,
  headsFlag: string,
): string[] {
  const notes: string[] = [];
  if (draftDevice === 'webgpu')
    notes.push(
      `the draft model runs on wasm beside a target on wasm (${draftFlag} webgpu applies beside a WebGPU target)`,
    );
  if (headsDevice === 'webgpu')
    notes.push(`the heads run on wasm beside a target on wasm (${headsFlag} webgpu applies beside a WebGPU target)`);
  return notes;
}

/**
 * The runner options of one model: layer switches, hidden-state outputs and exact decoding are the target's alone (a
 * draft never skips its layers or feeds heads, and its last bits change only what is proposed, never the text).
 */
function runnerOptions(o: OpenOptions, role: ModelRole = 'target'): RunnerOptions {
  const { device, precision, compute, int4, graph, onProgress, layerSwitches, hidden, variantMemory, exact } = o;
  if (role === 'draft' && o.draftDevice !== undefined && o.draftDevice !== 'auto' && o.draftDevice !== device) {
    // Another device than the target's: the precision and graph asked for are the target's device's.
    return {
      device: o.draftDevice,
      ...(variantMemory ? { variantMemory } : {}),
      ...(onProgress ? { onProgress } : {}),
    };
  }
  return {
    device,
    ...(variantMemory ? { variantMemory } : {}),
    ...(layerSwitches && role === 'target' ? { layerSwitches } : {}),
    ...(hidden && role === 'target' ? { hidden } : {}),
    ...(exact && role === 'target' ? { exact } : {}),
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
    // The loader names the folder (or the hub id with its revision) itself; said once.
    const named = new (e.constructor as new (m: string) => ModelLoadError)(
      spec && e.message.startsWith(`${spec}@`)
        ? `${role} model ${e.message}`
        : `${role} model${spec ? ` ${spec}` : ''}: ${e.message.startsWith(`${spec}: `) ? e.message.slice(spec.length + 2) : e.message}`,
    );
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
  checkDeviceAndGraph(options);
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
  const { target, draft } = await openModels(ort, specs, options);
  return { target, draft: draft as ModelRunner };
}

export interface OpenedModels {
  target: ModelRunner;
  draft: ModelRunner | null;
  /** Where the draft runs and how that was decided (device-choice.ts). */
  draftDevice: DeviceChoice | null;
  /** Where the heads run and how that was decided. */
  headsDevice: DeviceChoice | null;
  heads: OpenedHeads | null;
  /**
   * onnxruntime's start (ms), where this load started it on its own (ort-start.ts: Node, wasm) beside the reading of
   * the files: part of the load's time, overlapping it. Absent where it was started before (another engine in the
   * process) or not on its own (a browser, WebGPU: the target's session starts it).
   */
  startMs?: number;
}

/**
 * Load a target with, optionally, a draft (same vocabulary) and draft heads (trained on this target's features);
 * the target is built with the hidden-state outputs the heads read. Errors name the model they are about, and
 * whatever was already built is released.
 */
export async function openModels(
  ort: Ort,
  specs: { target: string; draft?: string; heads?: string },
  options: OpenOptions,
): Promise<OpenedModels> {
  checkPlacement(options);
  checkDeviceAndGraph(options);
  // onnxruntime's wasm compiled and started while the files are read (ort-start.ts): in Node, where a process starts
  // its one onnxruntime once. Not in a browser, where each engine gets a worker and an onnxruntime of its own: a load
  // that failed on its files there paid for a start it never used (20 fuzzed folders through the element took 60-66
  // s against 27), and no gain showed within that day's noise. On WebGPU the start needs the adapter, which the
  // target's session asks for.
  const startsHere = options.device === 'wasm' && isNode && !ortStartAsked(ort);
  const ortStarted = options.device === 'wasm' && isNode ? startOrt(ort) : Promise.resolve(null);
  const targetLoad = asRole('target', specs.target, () => loadModel(specs.target, options));
  const draftLoad = specs.draft
    ? asRole('draft', specs.draft, () => loadModel(specs.draft as string, options))
    : Promise.resolve(null);
  const headsLoad: Promise<LoadedHeads | null> = specs.heads
    ? targetLoad.then((t) =>
        asRole('heads', specs.heads as string, () =>
          loadHeads(specs.heads as string, t.config, {
            ...(options.onProgress ? { onProgress: options.onProgress } : {}),
            ...(options.base ? { base: options.base } : {}),
            ...(options.hub ? { hub: options.hub } : {}),
          }),
        ),
      )
    : Promise.resolve(null);
  // Settle all three before reporting the first failure, so no load is left running unobserved.
  const settled = await Promise.allSettled([targetLoad, draftLoad, headsLoad]);
  for (const s of settled) if (s.status === 'rejected') throw s.reason;
  const [targetModel, draftModel, headsModel] = settled.map((s) => (s as PromiseFulfilledResult<unknown>).value) as [
    LoadedModel,
    LoadedModel | null,
    LoadedHeads | null,
  ];
  if (draftModel) assertSameVocabulary(targetModel, draftModel);
  const built: { release(): Promise<void> }[] = [];
  const ortVersion = (ort as { env?: { versions?: { web?: string } } }).env?.versions?.web ?? '?';
  try {
    const hidden = headsModel ? hiddenKindFor(headsModel.kind) : undefined;
    const target = await asRole('target', specs.target, async () => {
      const failed = await ortStarted;
      if (failed) throw sessionError(failed, ort, `${specs.target}: onnxruntime could not start`);
      return ModelRunner.create(ort, targetModel, runnerOptions({ ...options, ...(hidden ? { hidden } : {}) }));
    });
    built.push(target);
    const opened = draftModel
      ? await asRole('draft', specs.draft as string, () =>
          openDraftOn(
            draftModel,
            options.device,
            options.draftDevice ?? 'auto',
            (device) =>
              ModelRunner.create(ort, draftModel, runnerOptions({ ...options, draftDevice: device }, 'draft')),
            ortVersion,
            options.variantMemory,
          ),
        )
      : null;
    const draft = opened?.runner ?? null;
    if (draft) built.push(draft);
    const headsOpened = headsModel
      ? await asRole('heads', specs.heads as string, () =>
          openOnFaster(
            choiceKey('heads', headsModel, ortVersion),
            options.device,
            options.headsDevice ?? 'auto',
            // On another device than the target's, in fp32 (the CPU's arithmetic).
            (device) =>
              openHeads(ort, headsModel, targetModel, device, device === options.device ? target.compute : 'fp32'),
            (h, device) => timeHeadsCalls(h, target.hiddenWidth, device),
            (h) => h.release(),
            options.variantMemory,
          ),
        )
      : null;
    const heads = headsOpened?.built ?? null;
    const startMs = startsHere ? ortStartMs(ort) : undefined;
    return {
      target,
      draft,
      draftDevice: opened?.choice ?? null,
      heads,
      headsDevice: headsOpened?.choice ?? null,
      ...(startMs !== undefined ? { startMs } : {}),
    };
  } catch (e) {
    for (const m of built) await m.release();
    throw e;
  }
}
