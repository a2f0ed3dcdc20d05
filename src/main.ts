/** The demo page's bootstrap: reports the WebGPU adapter and runs the self-test in a module worker. */
import { runSelftest } from './diagnostics/selftest';
import type { SelftestReport } from './diagnostics/selftest-protocol';
import { defaultOrtBase } from './runtime/ort-base';
import { describeAdapter, probeWebGpu } from './runtime/webgpu';

function el(testId: string): HTMLElement {
  const found = document.querySelector<HTMLElement>(`[data-testid="${testId}"]`);
  if (!found) throw new Error(`page is missing [data-testid=${testId}]`);
  return found;
}

function summarise(r: SelftestReport): string {
  const lines = [`onnxruntime-web ${r.ortVersion}`];
  lines.push(
    r.webgpu.ok
      ? `webgpu EP: ok in ${r.webgpu.ms.toFixed(0)} ms on ${r.ortDeviceArchitecture ?? 'an unnamed device'}`
      : `webgpu EP: failed: ${r.webgpu.error}`,
  );
  lines.push(r.wasm.ok ? `wasm EP: ok in ${r.wasm.ms.toFixed(0)} ms` : `wasm EP: failed: ${r.wasm.error}`);
  if (r.webgpuVsWasm !== undefined) lines.push(`max |webgpu - wasm| = ${r.webgpuVsWasm.toExponential(2)}`);
  if (r.wasmVsReference !== undefined)
    lines.push(`max |wasm - fp64 reference| = ${r.wasmVsReference.toExponential(2)}`);
  return lines.join('\n');
}

async function selftest(): Promise<void> {
  const ortStatus = el('ort-status');
  const result = el('selftest-result');
  result.textContent = 'running the self-test (MatMul + Softmax on webgpu, then on wasm)…';
  document.body.dataset.selftest = 'running';
  try {
    const report = await runSelftest(defaultOrtBase(document.baseURI));
    ortStatus.textContent = `${report.ortVersion}, wasm files served from ${defaultOrtBase(document.baseURI)}`;
    result.textContent = summarise(report);
    document.body.dataset.selftest = report.webgpu.ok ? 'webgpu-ok' : 'webgpu-failed';
    (window as unknown as { selftestReport: SelftestReport }).selftestReport = report;
  } catch (e) {
    result.textContent = (e as Error).message;
    document.body.dataset.selftest = 'error';
  }
}

async function main(): Promise<void> {
  const probe = await probeWebGpu();
  el('adapter-status').textContent = probe.ok ? describeAdapter(probe.adapter) : probe.reason;
  document.body.dataset.webgpu = probe.ok ? probe.adapter.architecture || 'unknown' : 'none';
  el('selftest-run').addEventListener('click', () => void selftest());
  await selftest();
}

void main();
