/// <reference lib="webworker" />
/**
 * The engine's home: a dedicated module worker that owns onnxruntime-web and both models, so the page never blocks.
 * ORT is imported here, not proxied (ORT's proxy mode does not work with WebGPU).
 */
import { SpecEngine } from '../engine/engine';
import { GenerationError } from '../engine/events';
import { checkModelOptions, checkPlacement, placementNotes } from '../model/index';
import { type ModelRunner, SessionCreateError } from '../model/runner';
import type { ProgressInfo } from '../model/source';
import { checkDeviceRequest, chooseDevice } from '../runtime/device';
import { ortForWeb, ortServes } from '../runtime/ort-web';
import { IndexedDbStore } from '../runtime/store-web';
import type { ThreadChoice } from '../runtime/thread-probe';
import { chooseWebWasmThreads, ortDefaultThreads } from '../runtime/thread-probe-web';
import { probeWebGpu } from '../runtime/webgpu';
import { deviceWasLost } from './device-loss';
import type { FromWorker, LoadInfo, LoadRequest, ModelInfo, ToWorker, WorkerError } from './protocol';

declare const self: DedicatedWorkerGlobalScope;

let engine: SpecEngine | null = null;
/**
 * A load here chose WebGPU: releasing onnxruntime's last WebGPU session destroys its device, so a later load in this
 * worker would start on a lost device (measured in Chromium: "the GPU device was lost (Device was destroyed.)" on an
 * EngineClient's second load). Such a load is handed back (a 'restart' message) for a fresh worker to make, as is one
 * asking for onnxruntime from another wasm folder than this worker's was set up from.
 */
let usedWebGpu = false;

/** load(): this worker cannot load again; the client sends the request to a fresh worker. */
class FreshWorkerNeeded extends Error {}
const running = new Map<number, AbortController>();

const post = (msg: FromWorker) => self.postMessage(msg);

function toError(e: unknown): WorkerError {
  // What a generation made before it failed goes back with the error: nothing generated is lost.
  if (e instanceof GenerationError) return { name: e.name, message: e.message, partial: e.partial };
  if (e instanceof Error) return { name: e.name, message: e.message };
  return { name: 'Error', message: String(e) };
}

function info(r: ModelRunner): ModelInfo {
  const c = r.config;
  return {
    spec: r.model.spec,
    modelType: c.modelType,
    layers: c.numLayers,
    hidden: c.hiddenSize,
    vocab: c.vocabSize,
    weightBytes: r.model.weightBytes,
    maxPositions: c.maxPositions,
    chatTemplate: r.model.tokenizer.hasChatTemplate,
    endOfTurnTokens: r.model.tokenizer.endOfTurnTokens,
  };
}

/** onnxruntime's GPU device, once a WebGPU load made one; watched for loss. */
let gpuDevice: GPUDevice | null = null;

async function watchDevice(ort: ReturnType<typeof ortForWeb>): Promise<void> {
  const device = (await ort.env.webgpu.device) as GPUDevice | undefined;
  if (!device || device === gpuDevice) return;
  gpuDevice = device;
  // Any loss counts, "destroyed" included: nothing in this worker destroys the device on purpose.
  device.lost.then((lost) => {
    engine = null;
    for (const c of running.values()) c.abort();
    post({
      type: 'device-lost',
      error: {
        name: 'DeviceLostError',
        message: `the GPU device was lost (${lost.message || lost.reason}); load the models again`,
      },
    });
  });
}

const describeChoice = (c: ThreadChoice) => ({
  threads: c.threads,
  how: c.how,
  timings: c.timings,
  ms: c.ms,
  ...(c.asked !== undefined ? { asked: c.asked } : {}),
});

/** The wasm threads onnxruntime started with in this worker (null until the first load). */
let started: ThreadChoice | null = null;

/**
 * On wasm, before onnxruntime's wasm starts: the thread count asked for, measured (remembered) for these models
 * when asked for 'auto', or onnxruntime's default.
 */
async function wasmThreads(ort: ReturnType<typeof ortForWeb>, req: LoadRequest): Promise<ThreadChoice> {
  if (started) return { ...started, how: 'already running' };
  const cores = self.navigator.hardwareConcurrency;
  // onnxruntime's default unless asked (thread-probe-web.ts says why the page does not measure by default).
  if (req.threads === undefined)
    return { threads: ortDefaultThreads(cores), how: 'default', cores, timings: [], ms: 0 };
  // A number asked for runs only on a cross-origin isolated page (shared memory); elsewhere onnxruntime falls back to
  // one thread, and the choice says so rather than the number asked for.
  const isolated = Boolean(globalThis.crossOriginIsolated);
  const choice: ThreadChoice =
    typeof req.threads === 'number'
      ? req.threads > 1 && !isolated
        ? { threads: 1, how: 'not isolated', cores, timings: [], ms: 0, asked: req.threads }
        : { threads: req.threads, how: 'asked', cores, timings: [], ms: 0 }
      : await chooseWebWasmThreads({
          target: req.target,
          ...(req.draft ? { draft: req.draft } : {}),
          base: req.base,
          ...(req.hub ? { hub: req.hub } : {}),
          wasmBase: req.ortBase,
          ortVersion: ort.env.versions.web ?? '?',
          store: new IndexedDbStore(),
        });
  ort.env.wasm.numThreads = choice.threads;
  return choice;
}

async function load(id: number, req: LoadRequest): Promise<LoadInfo> {
  // Options that are not ones are refused before the engine held is released: such a load leaves it usable.
  checkPlacement(req);
  checkDeviceRequest(req.device);
  checkModelOptions({
    ...(req.precision !== undefined ? { precision: req.precision } : {}),
    ...(req.compute !== undefined ? { compute: req.compute } : {}),
    ...(req.exact !== undefined ? { exact: req.exact } : {}),
    ...(req.layerSwitches !== undefined ? { layerSwitches: req.layerSwitches } : {}),
  });
  // onnxruntime here was set up from another wasm folder (a first load given a wrong one), or on WebGPU: a fresh
  // worker loads this one.
  if (usedWebGpu || !ortServes(req.ortBase)) throw new FreshWorkerNeeded();
  const ort = ortForWeb(req.ortBase);
  // Let go of first: a release that fails leaves no engine said to be kept.
  const old = engine;
  engine = null;
  await old?.release();
  const choice = chooseDevice(req.device, req.device === 'wasm' ? null : await probeWebGpu(self.navigator.gpu));
  let { device, fallback } = choice;
  const { adapter, warning, calibration, warmup } = choice;
  const threads = device === 'wasm' ? await wasmThreads(ort, req) : null;
  const options = {
    target: req.target,
    ...(req.draft ? { draft: req.draft } : {}),
    base: req.base,
    ...(req.compute ? { compute: req.compute } : {}),
    ...(req.precision ? { precision: req.precision } : {}),
    calibration,
    warmup,
    store: new IndexedDbStore(),
    ...(req.hub ? { hub: req.hub } : {}),
    ...(req.layerSwitches ? { layerSwitches: true } : {}),
    ...(req.exact ? { exact: true } : {}),
    onProgress: (info: ProgressInfo) => post({ type: 'progress', id, info }),
  };
  // The heads asked for, or those asked for only on WebGPU (auto's bundled EAGLE head) when the engine runs there.
  // Where the draft model and the heads run, as asked, beside a WebGPU target; beside a wasm one (asked, or a
  // fallback) on wasm.
  const extrasOn = (d: 'wasm' | 'webgpu') => {
    const heads = req.heads ?? (d === 'webgpu' ? req.gpuHeads : undefined);
    return {
      ...(heads ? { heads } : {}),
      ...(d === 'webgpu' && req.draftDevice ? { draftDevice: req.draftDevice } : {}),
      ...(d === 'webgpu' && req.headsDevice ? { headsDevice: req.headsDevice } : {}),
    };
  };
  const noteIfWasm = (d: 'wasm' | 'webgpu') => {
    if (d !== 'wasm') return;
    const notes = placementNotes(
      req.draft ? req.draftDevice : undefined,
      req.heads ? req.headsDevice : undefined,
      'draft-device',
      'heads-device',
    );
    for (const message of notes) post({ type: 'progress', id, info: { status: 'warning', name: req.target, message } });
  };
  noteIfWasm(device);
  if (device === 'webgpu') usedWebGpu = true;
  try {
    engine = await SpecEngine.load(ort, { ...options, ...extrasOn(device), device });
  } catch (e) {
    // A WebGPU session that cannot be built (an unsupported op, an adapter limit) falls back to wasm; bad model
    // files fail the same way on every device, so they are reported as they are.
    if (device !== 'webgpu' || !(e instanceof SessionCreateError)) throw e;
    device = 'wasm';
    fallback = `WebGPU session failed (${(e as Error).message}); running on the wasm (CPU) backend instead`;
    noteIfWasm(device);
    engine = await SpecEngine.load(ort, { ...options, ...extrasOn(device), device, calibration: 'auto', warmup: true });
  }
  // Whatever this load ran, onnxruntime's wasm has started: its thread count is fixed for this worker.
  started ??= threads ?? {
    threads: ort.env.wasm.numThreads ?? 1,
    how: 'already running',
    cores: self.navigator.hardwareConcurrency,
    timings: [],
    ms: 0,
  };
  if (device === 'webgpu') void watchDevice(ort);
  const result: LoadInfo = {
    device,
    compute: engine.target.compute,
    precision: engine.target.precision,
    graph: engine.target.variant,
    ...(engine.target.exact ? { exact: true } : {}),
    target: info(engine.target),
    ...(engine.draft ? { draft: info(engine.draft) } : {}),
    ...(engine.heads ? { heads: engine.heads.loaded.spec } : {}),
    ...(engine.draftDevice ? { draftDevice: { device: engine.draftDevice.device, how: engine.draftDevice.how } } : {}),
    ...(engine.headsDevice ? { headsDevice: { device: engine.headsDevice.device, how: engine.headsDevice.how } } : {}),
    ...(fallback ? { fallback } : {}),
    ...(warning && device === 'webgpu' ? { warning } : {}),
    ...(adapter ? { adapter } : {}),
    ...(device === 'wasm' ? { threads: describeChoice(threads ?? started) } : {}),
    timings: { ...engine.timings },
  };
  return result;
}

async function generate(id: number, req: Extract<ToWorker, { type: 'generate' }>['request']): Promise<void> {
  if (!engine) throw new Error('no models loaded: call load() first');
  const controller = new AbortController();
  running.set(id, controller);
  try {
    const it = engine.generate(req.messages ? { messages: req.messages } : req.prompt, {
      method: req.method,
      maxNewTokens: req.maxNewTokens,
      ...(req.sampling ? { sampling: req.sampling } : {}),
      ...(req.verifyRule ? { verifyRule: req.verifyRule } : {}),
      // Passed as given: the engine refuses what is not a list of token ids or a boolean, in one line.
      ...(req.stopTokens !== undefined ? { stopTokens: req.stopTokens } : {}),
      ...(req.stopAtEos !== undefined ? { stopAtEos: req.stopAtEos } : {}),
      signal: controller.signal,
    });
    for (;;) {
      const step = await it.next();
      if (step.done) {
        post({ type: 'done', id, result: step.value });
        return;
      }
      post({ type: 'round', id, event: step.value });
    }
  } finally {
    running.delete(id);
  }
}

self.onmessage = async (event: MessageEvent<ToWorker>) => {
  const msg = event.data;
  try {
    if (msg.type === 'load') post({ type: 'loaded', id: msg.id, info: await load(msg.id, msg.request) });
    else if (msg.type === 'generate') await generate(msg.id, msg.request);
    else if (msg.type === 'cancel') running.get(msg.id)?.abort();
  } catch (e) {
    if (e instanceof FreshWorkerNeeded) {
      post({ type: 'restart', id: msg.id });
      return;
    }
    if (await deviceWasLost(gpuDevice, e)) return; // the device-lost message fails this request with a readable error
    const error = toError(e);
    post({ type: 'error', id: msg.id, error: msg.type === 'load' && engine ? { ...error, kept: true } : error });
  }
};
