/// <reference lib="webworker" />
/**
 * Dedicated module worker: runs the self-test graph on the WebGPU EP (and nothing else) and on the wasm EP,
 * and reports both results so the page can compare them.
 */
import { loadModel } from '../model/load';
import { ortForWeb } from '../runtime/ort-web';
import { probeWebGpu } from '../runtime/webgpu';
import { buildSelftestCase, maxAbsDiff, selftestReference } from './selftest-graph';
import type { BackendRun, SelftestMessage, SelftestReport, SelftestRequest } from './selftest-protocol';
import { checkTreeConsistency, type TreeCheckReport } from './tree-check';

declare const self: DedicatedWorkerGlobalScope;

async function runOn(ort: ReturnType<typeof ortForWeb>, ep: 'webgpu' | 'wasm'): Promise<BackendRun> {
  const c = buildSelftestCase();
  const started = performance.now();
  try {
    const session = await ort.InferenceSession.create(c.model, { executionProviders: [ep] });
    try {
      const out = await session.run({ x: new ort.Tensor('float32', c.input, c.dims) });
      const data = (await out.probs?.getData()) as Float32Array;
      return { ok: true, ms: performance.now() - started, output: Array.from(data) };
    } finally {
      await session.release();
    }
  } catch (e) {
    return { ok: false, error: e instanceof Error ? e.message : String(e) };
  }
}

async function selftest(req: Extract<SelftestRequest, { kind: 'ops' }>): Promise<SelftestReport> {
  const ort = ortForWeb(req.ortBase);
  const probe = await probeWebGpu(self.navigator.gpu);
  // WebGPU first and alone: if it fails, it must fail, not fall back.
  const webgpu = await runOn(ort, 'webgpu');
  let ortDeviceArchitecture: string | undefined;
  if (webgpu.ok) {
    const device = (await ort.env.webgpu.device) as GPUDevice | undefined;
    ortDeviceArchitecture = device?.adapterInfo?.architecture;
  }
  const wasm = await runOn(ort, 'wasm');
  const report: SelftestReport = { ortVersion: ort.env.versions.web ?? 'unknown', probe, webgpu, wasm };
  if (ortDeviceArchitecture !== undefined) report.ortDeviceArchitecture = ortDeviceArchitecture;
  if (webgpu.ok && wasm.ok) report.webgpuVsWasm = maxAbsDiff(webgpu.output, wasm.output);
  if (wasm.ok) report.wasmVsReference = maxAbsDiff(wasm.output, selftestReference(buildSelftestCase()));
  return report;
}

async function treeCheck(req: Extract<SelftestRequest, { kind: 'tree' }>): Promise<TreeCheckReport[]> {
  const ort = ortForWeb(req.ortBase);
  const reports: TreeCheckReport[] = [];
  for (const spec of req.models) {
    const model = await loadModel(spec, { base: req.base });
    const prompt = model.tokenizer.encode('It is a truth universally acknowledged, that a single man');
    reports.push(await checkTreeConsistency(ort, model, req.device, prompt));
  }
  return reports;
}

self.onmessage = async (event: MessageEvent<SelftestRequest>) => {
  let message: SelftestMessage;
  try {
    const req = event.data;
    message =
      req.kind === 'ops'
        ? { type: 'report', report: await selftest(req) }
        : { type: 'tree', reports: await treeCheck(req) };
  } catch (e) {
    message = { type: 'error', error: e instanceof Error ? (e.stack ?? e.message) : String(e) };
  }
  self.postMessage(message);
};
