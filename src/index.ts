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
export type { Placement } from './model/device-choice';
export type { Precision } from './model/precision';
export type { ProgressInfo } from './model/source';
export type { ChatMessage } from './model/tokenizer';
// The element's events, typed in HTMLElementEventMap (sd-round's detail and the rest) for code that imports the package.
export type { SpecDecoderEventMap } from './ui/events';
export { SpecDecoder } from './ui/spec-decoder';
export type { LoadInfo, ModelInfo } from './worker/protocol';
