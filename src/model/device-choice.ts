/**
 * Where the draft model (and the draft heads) run next to a target on WebGPU, chosen by measurement
 * (OpenOptions.draftDevice and headsDevice 'auto', the defaults). A small model's call on a GPU costs its dispatches
 * and their submission, whatever its size: the bundled draft (1.6M parameters) took 8.6-16.7 ms a call on an NVIDIA
 * H100 through Dawn, 33 ms on lavapipe and 81 ms on SwiftShader, where the same call on the CPU (onnxruntime's wasm
 * EP) takes what reading its weights takes, 0.3-1 ms. A large draft on a real GPU goes the other way. So on a WebGPU
 * target the draft is built on both devices and timed at the widths drafting calls (one token, a chain's steps; four,
 * a tree's expansion), the faster kept and the other released. The heads the same way (heads/index.ts
 * timeHeadsCalls): on the CPU they read the target's hidden rows as they come back from each call anyway. The choice
 * is remembered per model, device pair and onnxruntime version, for the process and in the engine's store (a file in
 * Node, IndexedDB in a page), so later loads build it once.
 */

import { measureCurve } from '../engine/calibrate';
import { safeGet, safeSet } from '../engine/store';
import type { LoadedModel } from './load';
import type { Device } from './precision';
import type { ModelRunner } from './runner';
import type { VariantMemory } from './variant';

/** Where a draft model or heads may be asked to run: 'auto' (timed beside a WebGPU target), 'wasm' or 'webgpu'. */
export const PLACEMENTS = ['auto', 'wasm', 'webgpu'] as const;
export type Placement = (typeof PLACEMENTS)[number];
export const isPlacement = (v: unknown): v is Placement => (PLACEMENTS as readonly unknown[]).includes(v);

/**
 * The CLI's and the bench's --draft-device and --heads-device checked: the one-line message for the first value that
 * is not a placement (null: none), e.g. `--draft-device must be auto, wasm or webgpu; got "gpu"`.
 */
export function placementFlagError(draftDevice: string | undefined, headsDevice: string | undefined): string | null {
  const choices = `${PLACEMENTS.slice(0, -1).join(', ')} or ${PLACEMENTS.at(-1)}`;
  for (const [flag, v] of [
    ['--draft-device', draftDevice],
    ['--heads-device', headsDevice],
  ] as const)
    if (v !== undefined && !isPlacement(v)) return `${flag} must be ${choices}; got "${v}"`;
  return null;
}

export interface DeviceTiming {
  device: Device;
  /** Fastest ms of a draft call of one and of four tokens after a short context. */
  q1: number;
  q4: number;
}

export interface DeviceChoice {
  device: Device;
  /** The measured calls (empty when the choice was remembered or not measured). */
  timings: DeviceTiming[];
  /**
   * 'asked': the device asked for; 'target': the target's device, with nothing to choose ('auto' beside a target on
   * wasm); 'fallback': the build or timing failed on the other device (not remembered).
   */
  how: 'measured' | 'remembered' | 'asked' | 'target' | 'fallback';
}

/** Context before the timed calls, repeats per width (fastest taken), untimed rounds first (the heads' too). */
export const PROBE = { context: 16, reps: 5, warm: 2 } as const;

const remembered = new Map<string, DeviceChoice>();

const isDevice = (d: unknown): d is Device => d === 'wasm' || d === 'webgpu';

/** A remembered choice, its timings checked (a record edited or cut short reads as absent: measured again). */
function isChoice(v: unknown): v is DeviceChoice {
  const c = v as Partial<DeviceChoice> | undefined;
  return (
    typeof c === 'object' &&
    c !== null &&
    isDevice(c.device) &&
    Array.isArray(c.timings) &&
    c.timings.every(
      (t: Partial<DeviceTiming> | null) =>
        typeof t === 'object' &&
        t !== null &&
        isDevice(t.device) &&
        typeof t.q1 === 'number' &&
        typeof t.q4 === 'number',
    )
  );
}

/**
 * One-token and four-token calls after a short context, interleaved, the fastest of each (the calibration's own
 * measurement, calibrate.ts measureCurve, at these widths).
 */
export async function timeDraftCalls(runner: ModelRunner): Promise<DeviceTiming> {
  const { vocabSize } = runner.model.config;
  const tokens = Array.from({ length: PROBE.context + 8 }, (_, i) => (1 + i * 7) % vocabSize);
  const curve = await measureCurve(runner, tokens, [1, 4], PROBE.reps, PROBE.context, PROBE.warm);
  const ms = (q: number) => curve.points.find((p) => p.q === q)?.ms ?? Number.NaN;
  return { device: runner.device, q1: ms(1), q4: ms(4) };
}

/** The key of a model's choice: what it is (folder and weight bytes), the device pair and the runtime. */
export function choiceKey(
  kind: 'draft' | 'heads',
  model: { spec: string; weightBytes: number },
  ortVersion: string,
): string {
  return [`${kind}-device:v1`, ortVersion, model.spec, model.weightBytes, 'target:webgpu'].join(':');
}

/**
 * Open a model on `asked` ('wasm' or 'webgpu'), or next to a WebGPU target with 'auto' on the device timed faster
 * (remembered under `key` after the first time): `build` makes it on a device, `time` gives its calls' ms there
 * (the sum of its q1 and q4 decides), `release` frees the build not kept.
 */
export async function openOnFaster<T>(
  key: string,
  targetDevice: Device,
  asked: Device | 'auto',
  build: (device: Device) => Promise<T>,
  time: (built: T, device: Device) => Promise<DeviceTiming>,
  release: (built: T) => Promise<void>,
  memory?: VariantMemory,
): Promise<{ built: T; choice: DeviceChoice }> {
  // Beside a target on wasm a draft model or heads run on wasm, whatever was asked (a GPU used for them alone, next to
  // a CPU target, would pay a download of every call's inputs and outputs); the CLI and the element say so.
  if (targetDevice === 'wasm')
    return { built: await build('wasm'), choice: { device: 'wasm', timings: [], how: 'target' } };
  if (asked !== 'auto') return { built: await build(asked), choice: { device: asked, timings: [], how: 'asked' } };
  const known = remembered.get(key) ?? (memory ? await safeGet(memory, key) : undefined);
  if (isChoice(known)) {
    const choice = { ...known, how: 'remembered' as const };
    remembered.set(key, choice);
    return { built: await build(choice.device), choice };
  }
  // A build or timing that fails on one device leaves the other (a model that cannot load fails on both, and the
  // second failure is the one reported); such a choice is not remembered.
  const fallback = (built: T, device: Device, timings: DeviceTiming[]) => ({
    built,
    choice: { device, timings, how: 'fallback' as const },
  });
  let onCpu: T;
  let cpu: DeviceTiming;
  try {
    onCpu = await build('wasm');
  } catch {
    return fallback(await build('webgpu'), 'webgpu', []);
  }
  try {
    cpu = await time(onCpu, 'wasm');
  } catch {
    await release(onCpu);
    return fallback(await build('webgpu'), 'webgpu', []);
  }
  let onGpu: T;
  let gpu: DeviceTiming;
  try {
    onGpu = await build('webgpu');
  } catch {
    return fallback(onCpu, 'wasm', [cpu]);
  }
  try {
    gpu = await time(onGpu, 'webgpu');
  } catch {
    await release(onGpu);
    return fallback(onCpu, 'wasm', [cpu]);
  }
  const device: Device = cpu.q1 + cpu.q4 <= gpu.q1 + gpu.q4 ? 'wasm' : 'webgpu';
  const choice: DeviceChoice = { device, timings: [cpu, gpu], how: 'measured' };
  remembered.set(key, choice);
  if (memory) await safeSet(memory, key, choice);
  const [keep, drop] = device === 'wasm' ? [onCpu, onGpu] : [onGpu, onCpu];
  await release(drop);
  return { built: keep, choice };
}

/** The draft model on its device ('auto': the faster next to a WebGPU target; see openOnFaster). */
export async function openDraftOn(
  model: LoadedModel,
  targetDevice: Device,
  asked: Device | 'auto',
  build: (device: Device) => Promise<ModelRunner>,
  ortVersion: string,
  memory?: VariantMemory,
): Promise<{ runner: ModelRunner; choice: DeviceChoice }> {
  const { built, choice } = await openOnFaster(
    choiceKey('draft', model, ortVersion),
    targetDevice,
    asked,
    build,
    (runner) => timeDraftCalls(runner),
    (runner) => runner.release(),
    memory,
  );
  return { runner: built, choice };
}
