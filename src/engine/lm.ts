/**
 * What the engine needs from a model: a KV-cached causal LM that appends tokens under an attention bias and
 * returns logits rows. ModelRunner (onnxruntime-web) implements it; tests use small table-driven models.
 */
import type { ForwardInput } from '../model/runner';

export interface CausalLM {
  /** Cache slots the next call attends to. */
  readonly length: number;
  readonly calls: number;
  forward(input: ForwardInput): Promise<Float32Array>;
  keep(indices: ArrayLike<number>): void;
  reset(): void;
  readonly config: { vocabSize: number; maxPositions: number; eosTokenIds: number[] };
}
