/**
 * The library in Node (`import { SpecEngine, ortForNode } from 'spec-decoder'` resolves here under Node's "node"
 * export condition, or `spec-decoder/node` explicitly): the engine and the model layer, no DOM; `ortForNodeWebGpu`
 * runs it on WebGPU through Dawn (npm `webgpu`, imported only when called). The browser entry
 * (the <spec-decoder> element and EngineClient) is src/index.ts.
 */
export {
  type CostModel,
  createDrafter,
  type Drafter,
  type DraftRequest,
  type DraftTree,
  describeNeeds,
  METHOD_NAMES,
  METHODS,
  type Method,
  type MethodSpec,
  methodSpec,
  type Requirement,
  type TargetOutputs,
} from './engine/drafters/index';
export {
  type ChatPrompt,
  EngineBusyError,
  type EngineGenerateOptions,
  type EngineLoadOptions,
  MethodUnavailableError,
  SpecEngine,
} from './engine/engine';
export {
  GenerationError,
  type GenerationResult,
  type GenerationStats,
  type RoundEvent,
  type StopReason,
  type TokenPiece,
} from './engine/events';
export { type EngineParts, type GenerateOptions, generate, generateAll } from './engine/generate';
export { type CausalLM, ContextLimitError, type ForwardInput, MASKED } from './engine/lm';
export { GREEDY, type SamplingParams } from './engine/sampling';
export { type KeyValueStore, MemoryStore } from './engine/store';
export { type EngineTimings, timingsText } from './engine/timings';
export type { NodeStatus, VerifyRule } from './engine/verify';
export {
  type ComputeType,
  type DeviceChoice,
  type GraphVariant,
  type HubOptions,
  loadModel,
  ModelLoadError,
  ModelRunner,
  openModel,
  openPair,
  type Placement,
  type Precision,
  type ProgressInfo,
} from './model/index';
export type { Device } from './model/precision';
export type { ChatMessage } from './model/tokenizer';
export { ortForNode, ortThreads, useWasmCompilationHints } from './runtime/ort-node';
export { type NodeWebGpu, type NodeWebGpuOptions, ortForNodeWebGpu } from './runtime/ort-node-webgpu';
export { defaultStorePath, FileStore } from './runtime/store-node';
export { describeThreads, type ThreadChoice, type ThreadTiming } from './runtime/thread-probe';
export { chooseNodeWasmThreads, type NodeThreadOptions } from './runtime/thread-probe-node';
