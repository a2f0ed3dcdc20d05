/**
 * The library entry: the <spec-decoder> element (registered on import), the EngineClient for code, and the
 * engine types. `import 'spec-decoder'` and put <spec-decoder target="…" draft="…"></spec-decoder> in a page.
 */
export {
  type ClientGenerateOptions,
  type ClientLoadOptions,
  EngineClient,
  EngineError,
  type GenerationStream,
} from './client/engine-client';
export { describeNeeds, METHOD_NAMES, METHODS, type Method, type MethodSpec } from './engine/drafters/index';
export type { GenerationResult, GenerationStats, RoundEvent, StopReason, TokenPiece } from './engine/events';
export type { SamplingParams } from './engine/sampling';
export type { NodeStatus } from './engine/verify';
export type { ProgressInfo } from './model/source';
export { SpecDecoder } from './ui/spec-decoder';
export type { LoadInfo, ModelInfo } from './worker/protocol';
