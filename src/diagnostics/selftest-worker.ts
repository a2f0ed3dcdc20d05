/// <reference lib="webworker" />
/**
 * Dedicated module worker: runs the self-test graph on the WebGPU EP (and nothing else) and on the wasm EP,
 * and reports both results so the page can compare them.
 */
import { ModelLoadError } from '../model/errors';
import { loadModel } from '../model/load';
import { ortForWeb } from '../runtime/ort-web';
import { probeWebGpu } from '../runtime/webgpu';
import { buildSelftestCase, judgeRun, maxAbsDiff, runSelftestCase } from './selftest-graph';
import type { SelftestMessage, SelftestReport, SelftestRequest } from './selftest-protocol';
import { checkTreeConsistency, type TreeCheckReport } from './tree-check';

declare const self: DedicatedWorkerGlobalScope;

async function selftest(req: Extract<SelftestRequest, { kind: 'ops' }>): Promise<SelftestReport> {
  const ort = ortForWeb(req.ortBase);
  const probe = await probeWebGpu(self.navigator.gpu);
  // WebGPU first and alone: if it fails, it must fail, not fall back.
  const webgpu = await runSelftestCase(ort, 'webgpu', buildSelftestCase());
  let ortDeviceArchitecture: string | undefined;
  if (webgpu.ok) {
    const device = (await ort.env.webgpu.device) as GPUDevice | undefined;
    ortDeviceArchitecture = device?.adapterInfo?.architecture;
  }
  const wasm = await runSelftestCase(ort, 'wasm', buildSelftestCase());
  const report: SelftestReport = { ortVersion: ort.env.versions.web ?? 'unknown', probe, webgpu, wasm };
  if (ortDeviceArchitecture !== undefined) report.ortDeviceArchitecture = ortDeviceArchitecture;
  if (webgpu.ok && wasm.ok) report.webgpuVsWasm = maxAbsDiff(webgpu.output, wasm.output);
  if (wasm.ok) report.wasmVsReference = judgeRun(wasm).maxDiff;
  report.passed = judgeRun(webgpu).ok && judgeRun(wasm).ok;
  return report;
}

async function treeCheck(req: Extract<SelftestRequest, { kind: 'tree' }>): Promise<TreeCheckReport[]> {
  const ort = ortForWeb(req.ortBase);
  const reports: TreeCheckReport[] = [];
  for (const spec of req.models) {
    const model = await loadModel(spec, { base: req.base });
    const prompt = model.tokenizer.encode('It is a truth universally acknowledged, that a single man');
    const options = {
      ...(req.graph ? { graph: req.graph } : {}),
      ...(req.precision ? { precision: req.precision } : {}),
      ...(req.exact ? { exact: true } : {}),
    };
    reports.push(await checkTreeConsistency(ort, model, req.device, prompt, { runner: options }));
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
    // A model that cannot be loaded as asked is the user's to fix: its one line. Anything else: the stack.
    const error = e instanceof ModelLoadError ? e.message : e instanceof Error ? (e.stack ?? e.message) : String(e);
    message = { type: 'error', error };
  }
  self.postMessage(message);
};
