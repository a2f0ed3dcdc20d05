/** Tokenizers through transformers.js, built from the tokenizer.json we already fetched (works offline). */
import * as transformers from '@huggingface/transformers';
import { ModelLoadError } from './errors';

export interface TextTokenizer {
  encode(text: string): number[];
  decode(ids: readonly number[]): string;
  /** Number of entries in the tokenizer's vocabulary (may be less than the model's vocab_size). */
  readonly size: number;
}

type TokenizerClass = new (json: object, config: object) => transformers.PreTrainedTokenizer;

export function makeTokenizer(tokenizerJson: object, tokenizerConfig: Record<string, unknown>): TextTokenizer {
  const name = String(tokenizerConfig.tokenizer_class ?? 'PreTrainedTokenizer').replace(/Fast$/, '');
  const found = (transformers as unknown as Record<string, unknown>)[name];
  const cls = (
    typeof found === 'function' && found.prototype instanceof transformers.PreTrainedTokenizer
      ? found
      : transformers.PreTrainedTokenizer
  ) as TokenizerClass;
  let tok: transformers.PreTrainedTokenizer;
  try {
    tok = new cls(tokenizerJson, tokenizerConfig);
  } catch (e) {
    throw new ModelLoadError(`tokenizer.json could not be loaded: ${(e as Error).message}`);
  }
  const vocab = (tokenizerJson as { model?: { vocab?: Record<string, number> } }).model?.vocab ?? {};
  const added = (tokenizerJson as { added_tokens?: { id: number }[] }).added_tokens ?? [];
  const size = Math.max(-1, ...Object.values(vocab), ...added.map((t) => t.id)) + 1;
  return {
    encode: (text) => tok.encode(text),
    decode: (ids) => tok.decode([...ids], { skip_special_tokens: false }),
    size,
  };
}
