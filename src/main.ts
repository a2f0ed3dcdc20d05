/**
 * The demo page: the <spec-decoder> element with a settings form bound to its attributes, plus diagnostics (the
 * WebGPU adapter, a self-test in a module worker, a tree-attention check with the bundled models).
 */
import './ui/spec-decoder';
import './ui/model-picker';
import { runSelftest, runTreeCheck } from './diagnostics/selftest';
import type { SelftestReport } from './diagnostics/selftest-protocol';
import type { TreeCheckReport } from './diagnostics/tree-check';
import { type Method, methodSpec } from './engine/drafters/index';
import { defaultOrtBase } from './runtime/ort-base';
import { describeAdapter, probeWebGpu } from './runtime/webgpu';

function el(testId: string): HTMLElement {
  const found = document.querySelector<HTMLElement>(`[data-testid="${testId}"]`);
  if (!found) throw new Error(`page is missing [data-testid=${testId}]`);
  return found;
}

function summarise(r: SelftestReport): string {
  const lines = [
    `onnxruntime-web ${r.ortVersion}: ${r.passed ? 'PASS' : 'FAIL (a backend failed or disagrees with the fp64 reference)'}`,
  ];
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

/** The bundled pair, relative to the page. */
export const BUNDLED_MODELS = ['models/austen-draft/', 'models/austen-target/'];

async function treeCheck(): Promise<void> {
  const result = el('tree-result');
  const device = (el('tree-device') as HTMLSelectElement).value as 'webgpu' | 'wasm';
  const models =
    (el('tree-models') as HTMLSelectElement).value === 'both' ? BUNDLED_MODELS : BUNDLED_MODELS.slice(0, 1);
  result.textContent = `loading the bundled models and checking tree attention on ${device}…`;
  document.body.dataset.treecheck = 'running';
  try {
    const graph = (el('tree-graph') as HTMLSelectElement).value as 'plain' | 'fused' | 'hybrid';
    const precision = (el('tree-precision') as HTMLSelectElement).value as 'auto' | 'fp32' | 'fp16' | 'int4' | 'int8';
    const exact = (el('tree-exact') as HTMLInputElement).checked;
    const reports = await runTreeCheck(defaultOrtBase(document.baseURI), models, device, document.baseURI, {
      graph,
      precision,
      ...(exact ? { exact } : {}),
    });
    result.textContent = reports
      .map(
        (r) =>
          `${r.model} on ${r.device} (${r.variant} graph, ${r.precision}${r.exact ? ', exact decoding holds' : ''}): max |tree - paths| logits ${r.logitsDiff.toExponential(2)}, KV ${r.cacheDiff.toExponential(2)}; ` +
          `compaction ${r.compactionExact ? 'exact' : 'NOT exact'}, next-step diff ${r.compactionDiff.toExponential(2)} (${(r.ms / 1000).toFixed(1)} s)`,
      )
      .join('\n');
    (window as unknown as { treeCheckReports: TreeCheckReport[] }).treeCheckReports = reports;
    document.body.dataset.treecheck = 'done';
  } catch (e) {
    result.textContent = (e as Error).message;
    document.body.dataset.treecheck = 'error';
  }
}

type Demo = HTMLElement & { method: Method; draft: string };

/** The draft model of the pair picked (the bundled one at first); "Draft model: none" sets it aside. */
let pairDraft = '';

/** Target only or with the pair's draft; a method that needs a draft model gives way to prompt lookup. */
function applyDraft(demo: Demo): void {
  const choice = document.querySelector<HTMLSelectElement>('#settings [name="draft-model"]')?.value;
  demo.setAttribute('draft', choice === 'none' ? '' : pairDraft);
  if (!demo.draft && methodSpec(demo.method)?.needs.includes('draft-model')) demo.method = 'lookup';
}

/**
 * Mirror the settings form onto the element's attributes (fields marked data-manual are handled apart). With no
 * draft model the element disables the methods that need one.
 */
function bindSettings(): void {
  const form = document.getElementById('settings') as HTMLFormElement;
  const demo = document.getElementById('demo') as Demo;
  pairDraft = demo.draft;
  const apply = () => {
    for (const input of Array.from(form.elements) as (HTMLInputElement | HTMLSelectElement)[]) {
      if (!input.name || input.dataset.manual !== undefined) continue;
      if (input instanceof HTMLInputElement && input.type === 'checkbox')
        demo.toggleAttribute(input.name, input.checked);
      // An emptied number field means the default (the element restores it when its attribute goes), not 0.
      else if (input instanceof HTMLInputElement && input.type === 'number' && input.value.trim() === '')
        demo.removeAttribute(input.name);
      else demo.setAttribute(input.name, input.value);
    }
    applyDraft(demo);
  };
  form.addEventListener('input', apply);
  form.addEventListener('submit', (e) => e.preventDefault());
  apply();
}

/** The model picker sets the element's models (and chat mode for chat pairs); a load refreshes its cache view. */
function bindPicker(): void {
  const picker = document.getElementById('picker') as HTMLElementTagNameMap['sd-model-picker'];
  const demo = document.getElementById('demo') as Demo;
  const mode = document.querySelector<HTMLSelectElement>('#settings [name="mode"]');
  picker.addEventListener('sd-model-change', (e) => {
    demo.setAttribute('target', e.detail.target);
    pairDraft = e.detail.draft;
    applyDraft(demo);
    if (mode) {
      mode.value = e.detail.chat ? 'chat' : 'text';
      mode.dispatchEvent(new Event('input', { bubbles: true }));
    }
  });
  demo.addEventListener('sd-loaded', () => void picker.refresh());
}

/**
 * A diagnostics button is disabled while its check runs: a second click started a second check, and the result box
 * showed whichever ended last.
 */
async function busyWhile(button: HTMLElement, work: () => Promise<void>): Promise<void> {
  if ((button as HTMLButtonElement).disabled) return;
  (button as HTMLButtonElement).disabled = true;
  try {
    await work();
  } finally {
    (button as HTMLButtonElement).disabled = false;
  }
}

async function main(): Promise<void> {
  bindSettings();
  bindPicker();
  el('tree-run').addEventListener('click', () => void busyWhile(el('tree-run'), treeCheck));
  const probe = await probeWebGpu();
  el('adapter-status').textContent = probe.ok ? describeAdapter(probe.adapter) : probe.reason;
  document.body.dataset.webgpu = probe.ok ? probe.adapter.architecture || 'unknown' : 'none';
  el('selftest-run').addEventListener('click', () => void busyWhile(el('selftest-run'), selftest));
  // The self-test runs when the diagnostics panel is first opened, not at every page load: it compiles onnxruntime's
  // wasm and builds a WebGPU session in a worker of its own (5.0-5.7 s on two cores with SwiftShader), and at load it
  // ran beside the element's own first load and generation, on the same cores.
  const panel = document.querySelector('details.diagnostics') as HTMLDetailsElement;
  document.body.dataset.selftest = 'not run';
  const firstOpen = () => {
    if (!panel.open) return;
    panel.removeEventListener('toggle', firstOpen);
    void busyWhile(el('selftest-run'), selftest);
  };
  panel.addEventListener('toggle', firstOpen);
  firstOpen();
}

void main();
