/**
 * Memory per method (backend `node-memory`): one fresh Node process per method and device (bench/memory-run.ts),
 * each loading what its method needs, as the benchmark does, and generating; what the engine holds after loading and
 * after generating, against the target alone (plain decoding). The question it answers first: does a method that
 * drafts from the target itself (swift) keep one copy of the weights?
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tsxJson } from './child';

interface Held {
  /** onnxruntime's wasm heap: its size, and the 4 KiB pages of it ever written (resident). */
  reservedBytes: number;
  touchedBytes: number;
  /** Live GPU buffers (WebGPU only; onnxruntime's pool of freed buffers included). */
  gpuBytes: number;
}

export interface MemoryProcess {
  method: string;
  device: 'wasm' | 'webgpu';
  variant: string;
  loaded: Held;
  generated: Held & { gpuPeakBytes: number };
  rssBytes: number;
}

export interface MemoryReport {
  processes: MemoryProcess[];
  /** Devices that could not run (no WebGPU adapter), with the reason. */
  skipped: Record<string, string>;
}

export function benchMemory(options: {
  runs: readonly { method: string; device: 'wasm' | 'webgpu' }[];
  log: (line: string) => void;
}): MemoryReport {
  const cache = mkdtempSync(join(tmpdir(), 'spec-decoder-memory-'));
  const env = { ...process.env, SPEC_DECODER_CACHE: cache };
  const run = (method: string, device: string) =>
    tsxJson<MemoryProcess | { error: string }>('bench/memory-run.ts', [method, device], env, 'ignore');
  const processes: MemoryProcess[] = [];
  const skipped: Record<string, string> = {};
  try {
    // A first process per device remembers the graph-variant choice and the measured costs, as a user's first run
    // does; the measured processes then load as a later run would (the variant probe's sessions would otherwise
    // grow the heap of whichever process ran it).
    for (const device of new Set(options.runs.map((r) => r.device))) {
      const first = run('ar', device);
      if ('error' in first) skipped[device] = first.error;
    }
    for (const { method, device } of options.runs) {
      if (skipped[device]) continue;
      const r = run(method, device);
      if ('error' in r) {
        skipped[device] = r.error;
        continue;
      }
      processes.push(r);
      options.log(
        `${method} (${device}, ${r.variant}): heap ${mb(r.generated.touchedBytes)} of ${mb(r.generated.reservedBytes)} MB${device === 'webgpu' ? `, GPU ${mb(r.generated.gpuBytes)} MB` : ''}`,
      );
    }
    return { processes, skipped };
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
}

const mb = (bytes: number) => (bytes / 1e6).toFixed(1);

/** What the engine holds in all: the heap's written pages, and its GPU buffers. */
const held = (h: Held) => h.touchedBytes + h.gpuBytes;

export function memoryMarkdown(r: MemoryReport): string {
  const rows = r.processes.map((p) => {
    const base = r.processes.find((q) => q.device === p.device && q.method === 'ar');
    const ratio = (f: (x: MemoryProcess) => number) => (base ? `${(f(p) / f(base)).toFixed(2)}x` : '-');
    const gpu = (bytes: number) => (p.device === 'webgpu' ? mb(bytes) : '-');
    return `| ${p.method} | ${p.device} (${p.variant}) | ${mb(p.loaded.touchedBytes)} | ${gpu(p.loaded.gpuBytes)} | ${ratio((x) => held(x.loaded))} | ${mb(p.generated.touchedBytes)} of ${mb(p.generated.reservedBytes)} | ${gpu(p.generated.gpuBytes)} | ${ratio((x) => held(x.generated))} | ${ratio((x) => x.generated.reservedBytes)} |`;
  });
  return [
    '### Memory per method (fresh Node processes)',
    '',
    "One process per row: load what the method needs (the bundled target; the draft model for chain; the heads for eagle and medusa; the target with layer switches for swift; auto here is the target alone under the default method, which calibrates with wide calls), then generate two prompts. Heap: onnxruntime's wasm heap, the MB of it ever written (resident; the heap never gives pages back) of its size; GPU: live GPU buffers (onnxruntime's pool included); MB = 10^6 bytes. Ratios against plain decoding on the target alone (ar), heap written plus GPU.",
    '',
    '| method | device (graph) | heap after load | GPU after load | after load / ar | heap after generating | GPU after generating | after generating / ar | heap size / ar |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    ...Object.entries(r.skipped).map(([device, why]) => `\n${device}: not measured (${why})`),
  ].join('\n');
}
