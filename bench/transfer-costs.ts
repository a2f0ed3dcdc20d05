/**
 * What onnxruntime-web's WebGPU EP charges per call for moving tensors, apart from any model: a tiny graph (a chain
 * of nine Adds over rows of 256 floats, each adding the next input or, past the inputs given, a constant; then one
 * Add per output) run with 1, 4 and 10 inputs from the CPU and 1 or 4 outputs read back, and once with its output
 * left on the GPU. The chain keeps the dispatches the same whatever the inputs (ORT's Sum would run on the CPU). A
 * model call pays this for each input the CPU gives it and each output it downloads (the EAGLE head takes ten
 * inputs; the target three or four).
 */
import type * as OrtModule from 'onnxruntime-common';
import { GpuFeeds } from '../src/model/gpu-feeds';
import { OnnxGraph } from '../src/model/graph/onnx';
import { median } from '../src/util/median';

type Ort = Pick<typeof OrtModule, 'InferenceSession' | 'Tensor' | 'env'>;

export interface TransferCost {
  inputs: number;
  /** The ten rows come as one input [10, 256], sliced in the graph (what packing a model's inputs costs). */
  packed?: boolean;
  /** The inputs are written into GPU buffers of our own (src/model/gpu-feeds.ts) instead of given from the CPU. */
  written?: boolean;
  outputs: number;
  /** Outputs left on the GPU (nothing downloaded). */
  onGpu: boolean;
  /** Median ms per run. */
  ms: number;
}

export const TRANSFER_CASES: readonly Omit<TransferCost, 'ms'>[] = [
  { inputs: 1, outputs: 1, onGpu: true },
  { inputs: 1, outputs: 1, onGpu: false },
  { inputs: 4, outputs: 1, onGpu: false },
  { inputs: 10, outputs: 1, onGpu: false },
  { inputs: 1, packed: true, outputs: 1, onGpu: false },
  { inputs: 10, written: true, outputs: 1, onGpu: false },
  { inputs: 1, outputs: 4, onGpu: false },
];

const WIDTH = 256;

function tinyGraph(inputs: number, outputs: number, packed: boolean): Uint8Array {
  const g = new OnnxGraph('transfer-probe');
  const rows = (x: string) =>
    Array.from({ length: 10 }, (_, i) =>
      g.op('Slice', [x, g.constInt64([i]), g.constInt64([i + 1]), g.constInt64([0])]),
    );
  const xs = packed
    ? rows(g.input('x0', 'float32', [10, WIDTH]))
    : Array.from({ length: inputs }, (_, i) => g.input(`x${i}`, 'float32', [1, WIDTH]));
  let sum = xs[0] as string;
  for (let i = 1; i < 10; i++) sum = g.op('Add', [sum, xs[i] ?? g.constFloat32([i], [1])]);
  for (let j = 0; j < outputs; j++) {
    g.op('Add', [sum, g.constFloat32([j + 1], [1])], {}, `y${j}`);
    g.output(`y${j}`, 'float32', [1, WIDTH]);
  }
  return g.toBytes();
}

export async function transferCosts(ort: Ort, device: 'webgpu' | 'wasm', reps = 30): Promise<TransferCost[]> {
  const out: TransferCost[] = [];
  for (const c of TRANSFER_CASES) {
    if ((c.onGpu || c.written) && device !== 'webgpu') continue;
    const names = Array.from({ length: c.outputs }, (_, j) => `y${j}`);
    const session = await ort.InferenceSession.create(tinyGraph(c.inputs, c.outputs, c.packed === true), {
      executionProviders: [device],
      logSeverityLevel: 3,
      ...(c.onGpu ? { preferredOutputLocation: Object.fromEntries(names.map((n) => [n, 'gpu-buffer' as const])) } : {}),
    });
    const feeds = c.written ? await GpuFeeds.of(ort) : null;
    try {
      const times: number[] = [];
      for (let rep = 0; rep < reps + 5; rep++) {
        const t = performance.now();
        const given = Object.fromEntries(
          Array.from({ length: c.inputs }, (_, i) => {
            const rows = c.packed ? 10 : 1;
            const data = new Float32Array(rows * WIDTH).fill(rep + i);
            return [
              `x${i}`,
              feeds
                ? feeds.gpuTensor(`x${i}`, 'float32', data, [rows, WIDTH])
                : new ort.Tensor('float32', data, [rows, WIDTH]),
            ];
          }),
        );
        const result = await session.run(given);
        if (!c.onGpu) for (const n of names) await (result[n] as OrtModule.Tensor).getData();
        if (rep >= 5) times.push(performance.now() - t);
        for (const n of names) {
          const r = result[n] as OrtModule.Tensor;
          if (r.location === 'gpu-buffer') r.dispose();
        }
      }
      out.push({ ...c, ms: median(times) });
    } finally {
      feeds?.dispose();
      await session.release();
    }
  }
  return out;
}

export function transferCostsLine(rows: readonly TransferCost[]): string {
  const label = (r: TransferCost) =>
    `${r.packed ? '1 input of 10 rows sliced in the graph' : `${r.inputs} input${r.inputs > 1 ? 's' : ''}${r.written ? ' written into GPU buffers' : ''}`}, ${r.onGpu ? 'output left on the GPU' : `${r.outputs} output${r.outputs > 1 ? 's' : ''} read back`}`;
  return `onnxruntime's transfers on this adapter (a tiny graph, ms per call, median): ${rows.map((r) => `${label(r)} ${r.ms.toFixed(3)}`).join('; ')}.`;
}
