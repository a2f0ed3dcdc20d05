import type { WebGpuProbe } from '../runtime/webgpu';

import type { TreeCheckReport } from './tree-check';

export type SelftestRequest =
  /** MatMul + Softmax on the webgpu EP alone and on wasm. */
  | { kind: 'ops'; ortBase: string }
  /** Load model folders and check tree attention + compaction on a device. */
  | {
      kind: 'tree';
      ortBase: string;
      models: string[];
      device: 'webgpu' | 'wasm';
      base: string;
      /** Graph variant and precision to check (default: the runner's defaults). */
      graph?: 'plain' | 'fused' | 'hybrid';
      precision?: 'auto' | 'fp32' | 'fp16' | 'int4' | 'int8';
      /** Build the runners for exact decoding (checked at load: a load that fails says why). */
      exact?: boolean;
    };

export type BackendRun = { ok: true; ms: number; output: number[] } | { ok: false; error: string };

export interface SelftestReport {
  ortVersion: string;
  /** The adapter as seen from inside the worker. */
  probe: WebGpuProbe;
  /** adapterInfo.architecture of the GPUDevice onnxruntime-web itself created (proves the EP ran on it). */
  ortDeviceArchitecture?: string;
  webgpu: BackendRun;
  wasm: BackendRun;
  /** max |webgpu - wasm|, when both ran. */
  webgpuVsWasm?: number;
  /** max |wasm - fp64 reference|. */
  wasmVsReference?: number;
  /** Both backends ran and agree with the fp64 reference within SELFTEST_TOLERANCE. */
  passed?: boolean;
}

export type SelftestMessage =
  | { type: 'report'; report: SelftestReport }
  | { type: 'tree'; reports: TreeCheckReport[] }
  | { type: 'error'; error: string };
