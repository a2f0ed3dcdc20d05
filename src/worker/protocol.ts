/** The typed messages between EngineClient (main thread) and the engine worker. */
import type { Method } from '../engine/drafters/index';
import type { GenerationResult, RoundEvent } from '../engine/events';
import type { SamplingParams } from '../engine/sampling';
import type { EngineTimings } from '../engine/timings';
import type { VerifyRule } from '../engine/verify';
import type { Placement } from '../model/device-choice';
import type { ProgressInfo } from '../model/source';
import type { ChatMessage } from '../model/tokenizer';
import type { DeviceRequest } from '../runtime/device';
import type { ThreadTiming } from '../runtime/thread-probe';

export type DeviceChoice = 'webgpu' | 'wasm';

export interface LoadRequest {
  target: string;
  draft?: string;
  /**
   * `auto`: a hardware WebGPU adapter, else wasm (a software adapter is many times slower than wasm); `webgpu`: any
   * adapter, else wasm; the worker says why whenever it is not on WebGPU.
   */
  device: DeviceRequest;
  compute?: 'fp32' | 'fp16' | 'auto';
  /** Weights and arithmetic: 'fp32', 'fp16', 'int4', 'int8' (wasm) or 'auto' (default). */
  precision?: 'fp32' | 'fp16' | 'int4' | 'int8' | 'auto';
  /** Base URL that relative model folders resolve against (the page). */
  base: string;
  /** Folder holding onnxruntime-web's wasm files. */
  ortBase: string;
  /** For `hf:` ids: the hub host (default https://huggingface.co) and an access token for gated models. */
  hub?: { endpoint?: string; token?: string };
  /** Build the target with layer switches (self-speculation by layer skipping). */
  layerSwitches?: boolean;
  /** Exact decoding: greedy speculation gives exactly plain decoding's tokens (EngineLoadOptions.exact). */
  exact?: boolean;
  /** Draft heads trained on the target (Medusa heads or an EAGLE-3 head): methods medusa and eagle. */
  heads?: string;
  /** Heads loaded only when the engine runs on WebGPU, if `heads` is unset (auto's EAGLE head: defaultHeads). */
  gpuHeads?: string;
  /**
   * Where the draft model and the heads run beside a WebGPU target (EngineLoadOptions.draftDevice, headsDevice):
   * 'auto' (the default) times both devices and keeps the faster. An engine on wasm runs them on wasm.
   */
  draftDevice?: Placement;
  headsDevice?: Placement;
  /**
   * onnxruntime's wasm threads on the wasm device: unset, onnxruntime's default (half the cores, at most 4); 'auto'
   * measures 1, 2, ... up to the cores once per browser, machine and models and remembers the fastest (see
   * thread-probe-web.ts for why that is not the default); a number is used as given. Fixed by the worker's first
   * load.
   */
  threads?: number | 'auto';
}

export interface ModelInfo {
  spec: string;
  modelType: string;
  layers: number;
  hidden: number;
  vocab: number;
  weightBytes: number;
  maxPositions: number;
  /** tokenizer_config.json has a chat template; its end-of-turn tokens. */
  chatTemplate: boolean;
  endOfTurnTokens: number[];
}

export interface LoadInfo {
  device: DeviceChoice;
  compute: 'fp32' | 'fp16';
  /** What the target runs: 'fp32', 'fp16', 'int8', 'int4' or 'int4-fp16', and the graph variant measured fastest. */
  precision?: string;
  graph?: string;
  /** Exact decoding was asked for and the target passed its check at load. */
  exact?: boolean;
  /** Why the worker is not on WebGPU, when WebGPU was asked for or considered. */
  fallback?: string;
  /** A caution about the device it is on (a software WebGPU adapter). */
  warning?: string;
  /** On wasm: the threads onnxruntime runs with, how they were chosen, and the probe's timings (ms). */
  threads?: {
    threads: number;
    how: string;
    timings: ThreadTiming[];
    ms: number;
    /** The count asked for, where another runs (a page that is not cross-origin isolated runs one thread). */
    asked?: number;
  };
  adapter?: string;
  target: ModelInfo;
  draft?: ModelInfo;
  /** The draft heads loaded next to the target (their folder), if any. */
  heads?: string;
  /** Where the draft model and the heads run, and how that was decided (EngineLoadOptions.draftDevice, headsDevice). */
  draftDevice?: { device: 'wasm' | 'webgpu'; how: string };
  headsDevice?: { device: 'wasm' | 'webgpu'; how: string };
  /** Loading, warm-up and calibration times of the engine (milliseconds). */
  timings?: EngineTimings;
}

export interface GenerateRequest {
  /** Text, or token ids. */
  prompt: string | number[];
  /** A chat instead of `prompt`: applied through the target's chat template. */
  messages?: ChatMessage[];
  method: Method;
  maxNewTokens: number;
  /** Default greedy; settings left out (or undefined) take greedy decoding's. */
  sampling?: Partial<SamplingParams>;
  verifyRule?: VerifyRule;
  /** Token ids that end the generation too (SpecEngine's option). */
  stopTokens?: number[];
  /** Stop at the model's end of sequence, and a chat at its end of turn (default true). */
  stopAtEos?: boolean;
}

export interface WorkerError {
  name: string;
  message: string;
  /** A generation that failed part-way: what it had made (GenerationError.partial). */
  partial?: GenerationResult;
  /** A load refused before it released the engine loaded before (a bad option): that engine is still there. */
  kept?: boolean;
}

export type ToWorker =
  | { type: 'load'; id: number; request: LoadRequest }
  | { type: 'generate'; id: number; request: GenerateRequest }
  | { type: 'cancel'; id: number };

export type FromWorker =
  | { type: 'progress'; id: number; info: ProgressInfo }
  | { type: 'loaded'; id: number; info: LoadInfo }
  /**
   * This worker cannot load again (onnxruntime on WebGPU destroys its device when the last session is released, so
   * an engine reloaded here would start on a lost device): send the same load to a fresh worker. Sent once the
   * request's options were checked, before the engine held is released.
   */
  | { type: 'restart'; id: number }
  | { type: 'round'; id: number; event: RoundEvent }
  | { type: 'done'; id: number; result: GenerationResult }
  | { type: 'error'; id: number; error: WorkerError }
  /** The GPU device was lost: the engine in this worker is gone; load again (the client starts a new worker). */
  | { type: 'device-lost'; error: WorkerError };
