/** Finding a WebGPU adapter, and saying plainly why there is none. */

export interface AdapterReport {
  vendor: string;
  architecture: string;
  description: string;
  isFallbackAdapter: boolean;
  features: string[];
  shaderF16: boolean;
  maxBufferSize: number;
  maxStorageBufferBindingSize: number;
}

export type WebGpuProbe = { ok: true; adapter: AdapterReport } | { ok: false; reason: string };

export const NO_ADAPTER = 'no WebGPU adapter';

/** @internal (not in the package's declarations: its types are WebGPU's, which a user may not have) */
export async function probeWebGpu(gpu: GPU | undefined = globalThis.navigator?.gpu): Promise<WebGpuProbe> {
  if (!gpu) {
    return { ok: false, reason: `${NO_ADAPTER}: navigator.gpu is missing (this browser or context has no WebGPU)` };
  }
  let adapter: GPUAdapter | null;
  try {
    adapter = await gpu.requestAdapter();
  } catch (e) {
    return { ok: false, reason: `${NO_ADAPTER}: requestAdapter() failed: ${(e as Error).message}` };
  }
  if (!adapter) {
    return {
      ok: false,
      reason: `${NO_ADAPTER}: requestAdapter() returned null (WebGPU is disabled or blocklisted here; Chromium needs --enable-unsafe-webgpu on CPU-only machines)`,
    };
  }
  const info = adapter.info;
  const features = [...adapter.features].map(String).sort();
  return {
    ok: true,
    adapter: {
      vendor: info.vendor,
      architecture: info.architecture,
      description: info.description,
      isFallbackAdapter: Boolean((info as GPUAdapterInfo & { isFallbackAdapter?: boolean }).isFallbackAdapter),
      features,
      shaderF16: adapter.features.has('shader-f16'),
      maxBufferSize: adapter.limits.maxBufferSize,
      maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
    },
  };
}

export function describeAdapter(a: AdapterReport): string {
  const name = [a.vendor, a.architecture, a.description].filter(Boolean).join(' / ') || 'unnamed adapter';
  return `${name}${a.isFallbackAdapter ? ' (software fallback)' : ''}${a.shaderF16 ? ', shader-f16' : ', no shader-f16'}`;
}

/**
 * A CPU emulation of a GPU (SwiftShader in Chromium, lavapipe/llvmpipe through Dawn, or any adapter that reports
 * itself as a fallback): correct, but one model call takes far longer than on the wasm backend.
 */
export function isSoftwareAdapter(a: AdapterReport): boolean {
  const text = `${a.vendor} ${a.architecture} ${a.description}`.toLowerCase();
  return a.isFallbackAdapter || /swiftshader|llvmpipe|lavapipe|software/.test(text);
}
