/** The bench page: run the benchmark in this browser (wasm or WebGPU) and show the table. */
import { METHOD_NAMES } from '../src/engine/drafters/index';
import { defaultOrtBase } from '../src/runtime/ort-base';
import type { ColdMessage, ColdRequest, ColdResult } from './cold-worker';
import { type BenchReport, markdown, type TraceRow } from './harness';
import type { PeerMessage, PeerRequest, PeerRow } from './peer-worker';
import prompts from './prompts.json';
import type { BenchMessage, BenchRequest } from './worker';

type Options = BenchRequest['options'];

export function runInWorker(
  device: 'wasm' | 'webgpu',
  options: Options,
  onLog: (line: string) => void,
  /** Every round of the timed generations (bench --trace; none: not traced). */
  onRound?: (row: TraceRow) => void,
): Promise<BenchReport> {
  const worker = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' });
  return new Promise<BenchReport>((resolve, reject) => {
    worker.onmessage = (e: MessageEvent<BenchMessage>) => {
      const m = e.data;
      if (m.type === 'log') onLog(m.line);
      else if (m.type === 'round') onRound?.(m.row);
      else if (m.type === 'report') resolve(m.report);
      else reject(new Error(m.error));
    };
    worker.onerror = (e) => reject(new Error(`bench worker crashed: ${e.message}`));
    const request: BenchRequest = {
      ortBase: defaultOrtBase(document.baseURI),
      base: document.baseURI,
      device,
      target: 'models/austen-target/',
      draft: 'models/austen-draft/',
      heads: { medusa: 'models/austen-medusa/', eagle3: 'models/austen-eagle3/' },
      options,
      ...(onRound ? { traceRounds: true } : {}),
    };
    worker.postMessage(request);
  }).finally(() => worker.terminate());
}

const logEl = document.getElementById('log') as HTMLPreElement;
const out = document.getElementById('out') as HTMLPreElement;
const log = (line: string) => {
  logEl.textContent += `${line}\n`;
};

/**
 * Send one request (with this page's onnxruntime and model bases added) to a fresh worker, and settle on its reply:
 * `done` gives the value, `error` or a crash rejects; the worker is ended either way.
 */
function askWorker<Done extends { type: 'done' }, T>(
  worker: Worker,
  name: string,
  request: object,
  value: (done: Done) => T,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    worker.onmessage = (e: MessageEvent<Done | { type: 'error'; error: string }>) => {
      if (e.data.type === 'done') resolve(value(e.data as Done));
      else reject(new Error((e.data as { error: string }).error));
    };
    worker.onerror = (e) => reject(new Error(`${name} worker crashed: ${e.message}`));
    worker.postMessage({ ...request, ortBase: defaultOrtBase(document.baseURI), base: document.baseURI });
  }).finally(() => worker.terminate());
}

export function runPeer(
  request: Omit<PeerRequest, 'ortBase' | 'base'>,
): Promise<{ rows: PeerRow[]; versions: string }> {
  const worker = new Worker(new URL('./peer-worker.ts', import.meta.url), { type: 'module' });
  return askWorker(worker, 'peer', request, (d: Extract<PeerMessage, { type: 'done' }>) => ({
    rows: d.rows,
    versions: d.versions,
  }));
}

/** One cold run (bench/cold-worker.ts) in a fresh worker. */
export function runCold(request: Omit<ColdRequest, 'ortBase' | 'base'>): Promise<ColdResult> {
  const worker = new Worker(new URL('./cold-worker.ts', import.meta.url), { type: 'module' });
  return askWorker(worker, 'cold', request, (d: Extract<ColdMessage, { type: 'done' }>) => d.result);
}

Object.assign(window, {
  benchmark: (device: 'wasm' | 'webgpu', options: Options, onLog = log, onRound?: (row: TraceRow) => void) =>
    runInWorker(device, options, onLog, onRound),
  peerBenchmark: runPeer,
  coldBenchmark: runCold,
});

document.getElementById('run')?.addEventListener('click', async () => {
  const form = new FormData(document.getElementById('form') as HTMLFormElement);
  const device = form.get('device') as 'wasm' | 'webgpu';
  try {
    const report = await runInWorker(
      device,
      {
        prompts: prompts.prompts.slice(0, Number(form.get('prompts'))).map(({ kind, text }) => ({ kind, text })),
        methods: [...METHOD_NAMES],
        maxNewTokens: Number(form.get('tokens')),
        repeats: Number(form.get('repeats')),
        curveQs: [1, 2, 4, 8, 16, 32, 64],
        curveReps: 3,
      },
      log,
    );
    out.textContent = markdown(`${device} in this browser`, report);
  } catch (e) {
    out.textContent = (e as Error).message;
  }
});
