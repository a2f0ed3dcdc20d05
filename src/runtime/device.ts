/**
 * Which ORT backend a browser load runs on. `auto` (the default) takes a hardware WebGPU adapter and otherwise
 * wasm: a software adapter (SwiftShader, lavapipe, any fallback adapter) emulates the GPU on the CPU and runs these
 * models many times slower than the wasm backend (measured at about 60x on our machines). An explicit `webgpu`
 * still uses a software adapter, with a warning; with no adapter at all it falls back to wasm.
 */
import { describeAdapter, isSoftwareAdapter, type WebGpuProbe } from './webgpu';

/** The devices a browser load may ask for. */
export const DEVICE_REQUESTS = ['auto', 'webgpu', 'wasm'] as const;
export type DeviceRequest = (typeof DEVICE_REQUESTS)[number];
export const isDeviceRequest = (v: unknown): v is DeviceRequest => (DEVICE_REQUESTS as readonly unknown[]).includes(v);

export interface DeviceDecision {
  device: 'webgpu' | 'wasm';
  /** Why the load is not on WebGPU when WebGPU was asked for or considered (shown as a notice). */
  fallback?: string;
  /** A caution about the device chosen (shown as a notice). */
  warning?: string;
  /** The adapter, described, when there is one. */
  adapter?: string;
  /** On a software adapter one call takes about a second: the engine must not time its costs by itself there. */
  calibration: 'auto' | 'never';
  /**
   * Whether the engine runs its warm-up calls after loading: not on a software adapter, where they cost more than
   * they save. Measured on SwiftShader (bundled pair, greedy chain then tree, 8 tokens each): the warm-up took 13.8 s
   * and made the first generation 4.4 s shorter and the first tree round's shapes 1.3 s shorter; without it, load,
   * chain and tree took 24.3 s in all against 32.4 s.
   */
  warmup: boolean;
}

/** Refuses a device request that is not one (anything else used to mean WebGPU: "gpu", "WASM" ran on a software adapter). */
export function checkDeviceRequest(requested: unknown): asserts requested is DeviceRequest {
  if (!isDeviceRequest(requested))
    throw new RangeError(`device "${String(requested)}" is not one of auto, wasm, webgpu`);
}

/** Decide from the request and the adapter probe (null when the request is wasm and nothing was probed). */
export function chooseDevice(requested: DeviceRequest, probe: WebGpuProbe | null): DeviceDecision {
  checkDeviceRequest(requested);
  if (requested === 'wasm' || !probe) return { device: 'wasm', calibration: 'auto', warmup: true };
  if (!probe.ok) {
    return {
      device: 'wasm',
      fallback: `${probe.reason}; running on the wasm (CPU) backend instead`,
      calibration: 'auto',
      warmup: true,
    };
  }
  const adapter = describeAdapter(probe.adapter);
  if (!isSoftwareAdapter(probe.adapter)) return { device: 'webgpu', adapter, calibration: 'auto', warmup: true };
  if (requested === 'auto') {
    return {
      device: 'wasm',
      adapter,
      fallback: `the only WebGPU adapter here is a software WebGPU adapter (${adapter}), which runs these models many times slower than the wasm (CPU) backend; running on wasm. Set device="webgpu" to use it anyway`,
      calibration: 'auto',
      warmup: true,
    };
  }
  return {
    device: 'webgpu',
    adapter,
    warning: `running on a software WebGPU adapter (${adapter}): expect it to be many times slower than device="wasm"`,
    calibration: 'never',
    warmup: false,
  };
}
