/**
 * A synthetic byte-level BPE tokenizer.json of any vocabulary size, for model folders with random weights: the 256
 * byte symbols, then every merge of a short alphabet (pairs, triples, ...) until the regular vocabulary is full,
 * plus special tokens at the ids the real tokenizer gives them. transformers.js loads it like GPT-2's; any text
 * encodes (bytes always do), every id decodes.
 */

export interface SpecialToken {
  id: number;
  content: string;
}

export interface SyntheticTokenizerSpec {
  /** Ids 0 .. size-1 all exist (regular tokens fill the ids the specials leave free). */
  size: number;
  specials: SpecialToken[];
}

/** A tokenizer.json `added_tokens` entry for a special token, matched as it is written (never normalised or split). */
export function addedSpecialToken({ id, content }: SpecialToken) {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true };
}

/** GPT-2's byte-to-symbol table: printable bytes map to themselves, the rest to U+0100 onwards. */
export function byteSymbols(): string[] {
  const printable = (b: number) => (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  const out: string[] = [];
  let extra = 0;
  for (let b = 0; b < 256; b++) out.push(String.fromCharCode(printable(b) ? b : 256 + extra++));
  return out;
}

/** 'Ġ' is the byte-level symbol of a space; letters by English frequency, so short tokens look like text. */
const ALPHABET = ['Ġ', ...'etaoinshrdlcumwfgypbvkjxqz'];

export function syntheticTokenizer(spec: SyntheticTokenizerSpec): {
  tokenizer: Record<string, unknown>;
  regular: number;
} {
  const specialIds = new Set(spec.specials.map((s) => s.id));
  for (const s of spec.specials) {
    if (!Number.isInteger(s.id) || s.id < 0 || s.id >= spec.size) {
      throw new RangeError(`special token ${s.content} has id ${s.id}, outside [0, ${spec.size})`);
    }
  }
  const regular = spec.size - specialIds.size;
  if (regular < 256) throw new RangeError(`a vocabulary of ${spec.size} leaves no room for the 256 byte symbols`);
  const tokens: string[] = byteSymbols();
  const merges: string[] = [];
  // Grow tokens one symbol at a time: level n holds every string of n alphabet symbols; level n+1 = level n x alphabet.
  let level = [...ALPHABET];
  while (tokens.length < regular) {
    const next: string[] = [];
    for (const prefix of level) {
      for (const c of ALPHABET) {
        if (tokens.length >= regular) break;
        tokens.push(prefix + c);
        merges.push(`${prefix} ${c}`);
        next.push(prefix + c);
      }
      if (tokens.length >= regular) break;
    }
    level = next;
  }
  const vocab: Record<string, number> = {};
  let id = 0;
  for (const t of tokens) {
    while (specialIds.has(id)) id++;
    vocab[t] = id++;
  }
  const addedTokens = spec.specials.map(addedSpecialToken);
  for (const s of spec.specials) vocab[s.content] = s.id;
  const byteLevel = { add_prefix_space: false, trim_offsets: true, use_regex: true };
  return {
    regular,
    tokenizer: {
      version: '1.0',
      truncation: null,
      padding: null,
      added_tokens: addedTokens,
      normalizer: null,
      pre_tokenizer: { type: 'ByteLevel', ...byteLevel },
      post_processor: { type: 'ByteLevel', ...byteLevel },
      decoder: { type: 'ByteLevel', ...byteLevel },
      model: {
        type: 'BPE',
        dropout: null,
        unk_token: null,
        continuing_subword_prefix: '',
        end_of_word_suffix: '',
        fuse_unk: false,
        byte_fallback: false,
        ignore_merges: false,
        vocab,
        merges,
      },
    },
  };
}
