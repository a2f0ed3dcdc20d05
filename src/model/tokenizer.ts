/**
 * Tokenizers through transformers.js, built from the tokenizer.json we already fetched (works offline), and chat
 * templates through its apply_chat_template (@huggingface/jinja), from tokenizer_config.json's chat_template.
 */
import * as transformers from '@huggingface/transformers';
import { ModelLoadError } from './errors';
import { parseJsonObject } from './source';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface TextTokenizer {
  encode(text: string, options?: { addSpecialTokens?: boolean }): number[];
  decode(ids: readonly number[]): string;
  /** Number of entries in the tokenizer's vocabulary (may be less than the model's vocab_size). */
  readonly size: number;
  /** Whether tokenizer_config.json has a chat template. */
  readonly hasChatTemplate: boolean;
  /** The prompt text the chat template makes of `messages`, ending with the assistant's turn opening. */
  applyChatTemplate(messages: readonly ChatMessage[]): string;
  /** The special tokens that end an assistant turn under the template (and the tokenizer's eos_token). */
  readonly endOfTurnTokens: number[];
}

type TokenizerClass = new (json: object, config: object) => transformers.PreTrainedTokenizer;

/**
 * What the template writes right after an assistant message, as special tokens: render a two-turn conversation,
 * take the text after the assistant's content, and keep its leading special tokens (ChatML's <|im_end|>, Llama 3's
 * <|eot_id|>, …).
 */
function endOfTurn(tok: transformers.PreTrainedTokenizer, special: Set<number>, eos: number | undefined): number[] {
  const out = new Set<number>(eos === undefined ? [] : [eos]);
  const marker = 'Z9q7 end-of-turn probe';
  try {
    const text = tok.apply_chat_template(
      [
        { role: 'user', content: 'hello' },
        { role: 'assistant', content: marker },
      ],
      { tokenize: false, add_generation_prompt: false },
    ) as string;
    const at = text.lastIndexOf(marker);
    if (at >= 0) {
      for (const id of tok.encode(text.slice(at + marker.length), { add_special_tokens: false })) {
        if (!special.has(id)) {
          if (out.size > 0) break;
          continue; // whitespace before the marker token
        }
        out.add(id);
        break;
      }
    }
  } catch {
    // a template that cannot render this probe: the eos token alone
  }
  return [...out];
}

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
  const added =
    (tokenizerJson as { added_tokens?: { id: number; content: string; special?: boolean }[] }).added_tokens ?? [];
  // A loop, not Math.max(...ids): spreading a 150k-entry vocabulary overflows the call stack.
  let last = -1;
  for (const id of Object.values(vocab)) if (id > last) last = id;
  for (const t of added) if (t.id > last) last = t.id;
  const size = last + 1;
  const hasChatTemplate =
    typeof tokenizerConfig.chat_template === 'string' || Array.isArray(tokenizerConfig.chat_template);
  const special = new Set(added.filter((t) => t.special !== false).map((t) => t.id));
  const eosText = tokenizerConfig.eos_token;
  const eosContent = typeof eosText === 'string' ? eosText : (eosText as { content?: string } | undefined)?.content;
  const eos = added.find((t) => t.content === eosContent)?.id;
  return {
    encode: (text, options = {}) => tok.encode(text, { add_special_tokens: options.addSpecialTokens ?? true }),
    decode: (ids) => tok.decode([...ids], { skip_special_tokens: false }),
    size,
    hasChatTemplate,
    applyChatTemplate(messages) {
      if (!hasChatTemplate)
        throw new ModelLoadError('this model has no chat template (tokenizer_config.json chat_template)');
      try {
        return tok.apply_chat_template(
          messages.map((m) => ({ ...m })),
          { tokenize: false, add_generation_prompt: true },
        ) as string;
      } catch (e) {
        throw new ModelLoadError(`the chat template could not be applied: ${(e as Error).message}`);
      }
    },
    endOfTurnTokens: hasChatTemplate ? endOfTurn(tok, special, eos) : eos === undefined ? [] : [eos],
  };
}

/** tokenizer.json's model.vocab of each tokenizer made by tokenizerFromFiles. */
const vocabs = new WeakMap<TextTokenizer, Record<string, number>>();
/** Tokenizers by their files' texts, held weakly: one no loaded model uses any more is let go. */
const made = new Map<string, WeakRef<TextTokenizer>>();
const forget = new FinalizationRegistry<string>((key) => {
  if (made.get(key)?.deref() === undefined) made.delete(key);
});

/**
 * The tokenizer of a folder's tokenizer.json and tokenizer_config.json (their texts; null: no config), with
 * tokenizer.json's model.vocab. One made of byte-for-byte the same files is shared while some loaded model still
 * holds it: a draft model of the target's family ships the target's tokenizer (the bundled pair's files are the
 * same), and making it again took 15-45 ms of the main thread in a CLI load, beside the compile of onnxruntime's wasm.
 * Parse errors name the file and `location`.
 */
export function tokenizerFromFiles(
  text: string,
  configText: string | null,
  location: string,
): { tokenizer: TextTokenizer; vocab: Record<string, number> } {
  // Both texts whole, the config's length first: equal keys are equal files.
  const key = `${configText?.length ?? -1}:${configText ?? ''}\u0000${text}`;
  const kept = made.get(key)?.deref();
  const keptVocab = kept && vocabs.get(kept);
  if (kept && keptVocab) return { tokenizer: kept, vocab: keptVocab };
  const json = parseJsonObject(text, 'tokenizer.json', location);
  const config = configText === null ? {} : parseJsonObject(configText, 'tokenizer_config.json', location);
  const tokenizer = makeTokenizer(json, config);
  const vocab = ((json.model as { vocab?: Record<string, number> } | undefined)?.vocab ?? {}) as Record<string, number>;
  vocabs.set(tokenizer, vocab);
  made.set(key, new WeakRef(tokenizer));
  forget.register(tokenizer, key);
  return { tokenizer, vocab };
}
