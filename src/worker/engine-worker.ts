/// <reference lib="webworker" />
/**
 * The engine's home: a dedicated module worker that owns onnxruntime-web and both models, so the page never blocks.
 * ORT is imported here, not proxied (ORT's proxy mode does not work with WebGPU).
 */
import { SpecEngine } from '../engine/engine';
import { type ModelRunner, SessionCreateError } from '../model/runner';
import type { ProgressInfo } from '../model/source';
import { ortForWeb } from '../runtime/ort-web';
import { IndexedDbStore } from '../runtime/store-web';
import { describeAdapter, isSoftwareAdapter, probeWebGpu } from '../runtime/webgpu';
import type { FromWorker, LoadInfo, LoadRequest, ModelInfo, ToWorker, WorkerError } from './protocol';

declare const self: DedicatedWorkerGlobalScope;

let engine: SpecEngine | null = null;
const running = new Map<number, AbortController>();

const post = (msg: FromWorker) => self.postMessage(msg);

function toError(e: unknown): WorkerError {
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

async function watchDevice(ort: ReturnType<typeof ortForWeb>): Promise<void> {
  const device = (await ort.env.webgpu.device) as GPUDevice | undefined;
  device?.lost.then((lost) => {
    if (lost.reason === 'destroyed') return;
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

async function load(id: number, req: LoadRequest): Promise<LoadInfo> {
  const ort = ortForWeb(req.ortBase);
  await engine?.release();
  engine = null;
  let device = req.device;
  let fallback: string | undefined;
  let adapter: string | undefined;
  // On a software adapter one call takes about a second: the engine must not measure its costs by itself there.
  let calibration: 'auto' | 'never' = 'auto';
  if (device === 'webgpu') {
    const probe = await probeWebGpu(self.navigator.gpu);
    if (probe.ok) {
      adapter = describeAdapter(probe.adapter);
      if (isSoftwareAdapter(probe.adapter)) calibration = 'never';
    } else {
      device = 'wasm';
      fallback = `${probe.reason}; running on the wasm (CPU) backend instead`;
    }
  }
  const options = {
    target: req.target,
    ...(req.draft ? { draft: req.draft } : {}),
    base: req.base,
    ...(req.compute ? { compute: req.compute } : {}),
    ...(req.precision ? { precision: req.precision } : {}),
    calibration,
    store: new IndexedDbStore(),
    ...(req.hub ? { hub: req.hub } : {}),
    ...(req.layerSwitches ? { layerSwitches: true } : {}),
    onProgress: (info: ProgressInfo) => post({ type: 'progress', id, info }),
  };
  try {
    engine = await SpecEngine.load(ort, { ...options, device });
  } catch (e) {
    // A WebGPU session that cannot be built (an unsupported op, an adapter limit) falls back to wasm; bad model
    // files fail the same way on every device, so they are reported as they are.
    if (device !== 'webgpu' || !(e instanceof SessionCreateError)) throw e;
    device = 'wasm';
    fallback = `WebGPU session failed (${(e as Error).message}); running on the wasm (CPU) backend instead`;
    engine = await SpecEngine.load(ort, { ...options, device, calibration: 'auto' });
  }
  if (device === 'webgpu') void watchDevice(ort);
  const result: LoadInfo = {
    device,
    compute: engine.target.compute,
    precision: engine.target.precision,
    graph: engine.target.variant,
    target: info(engine.target),
    ...(engine.draft ? { draft: info(engine.draft) } : {}),
    ...(fallback ? { fallback } : {}),
    ...(adapter ? { adapter } : {}),
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
      sampling: req.sampling,
      ...(req.verifyRule ? { verifyRule: req.verifyRule } : {}),
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
    post({ type: 'error', id: msg.id, error: toError(e) });
  }
};
