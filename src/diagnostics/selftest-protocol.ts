import type { WebGpuProbe } from '../runtime/webgpu';

export interface SelftestRequest {
  /** Absolute URL of the folder holding onnxruntime-web's wasm files. */
  ortBase: string;
}

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
}

export type SelftestMessage = { type: 'report'; report: SelftestReport } | { type: 'error'; error: string };
