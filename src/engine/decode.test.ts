import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { addedSpecialToken } from '../../tools/synthetic-tokenizer';
import { makeTokenizer } from '../model/tokenizer';
import { IncrementalDecoder } from './decode';
import { Rng } from './sampling';

const BUNDLED = 'public/models/austen-target/';
const bundled = makeTokenizer(
  JSON.parse(readFileSync(`${BUNDLED}tokenizer.json`, 'utf8')),
  JSON.parse(readFileSync(`${BUNDLED}tokenizer_config.json`, 'utf8')),
);

/** A SentencePiece-style tokenizer as Llama, Mistral and TinyLlama ship it: its decoder strips one leading space. */
function sentencePiece() {
  const vocab: Record<string, number> = { '<unk>': 0, '<s>': 1, '</s>': 2 };
  for (let b = 0; b < 256; b++) vocab[`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`] = 3 + b;
  ['▁', '▁universally', '▁acknowledged', '▁truth', 'ly'].forEach((t, i) => {
    vocab[t] = 259 + i;
  });
  const special = ['<unk>', '<s>', '</s>'];
  return makeTokenizer(
    {
      version: '1.0',
      truncation: null,
      padding: null,
      added_tokens: special.map((content, id) => addedSpecialToken({ id, content })),
      normalizer: {
        type: 'Sequence',
        normalizers: [
          { type: 'Prepend', prepend: '▁' },
          { type: 'Replace', pattern: { String: ' ' }, content: '▁' },
        ],
      },
      pre_tokenizer: null,
      post_processor: null,
      decoder: {
        type: 'Sequence',
        decoders: [
          { type: 'Replace', pattern: { String: '▁' }, content: ' ' },
          { type: 'ByteFallback' },
          { type: 'Fuse' },
          { type: 'Strip', content: ' ', start: 1, stop: 0 },
        ],
      },
      model: {
        type: 'BPE',
        dropout: null,
        unk_token: '<unk>',
        continuing_subword_prefix: null,
        end_of_word_suffix: null,
        fuse_unk: true,
        byte_fallback: true,
        vocab,
        merges: [],
      },
    },
    { tokenizer_class: 'LlamaTokenizer', bos_token: '<s>', eos_token: '</s>', add_bos_token: true, legacy: false },
  );
}

describe('incremental decoding', () => {
  it("keeps the first generated word's leading space where the decoder strips one (SentencePiece)", () => {
    const tok = sentencePiece();
    const prompt = [1, 262]; // <s> ▁truth
    const generated = [260, 261]; // ▁universally ▁acknowledged
    const d = new IncrementalDecoder(tok, prompt);
    expect(generated.flatMap((t) => d.push([t]))).toEqual([' universally', ' acknowledged']);
    expect(tok.decode(prompt) + d.text).toBe(tok.decode([...prompt, ...generated]));
    // A preview of rejected tokens reads the same way and commits nothing.
    expect(new IncrementalDecoder(tok, prompt).preview([260])).toEqual([' universally']);
  });

  it('gives the text of the whole, however the tokens come, valid UTF-8 or not (byte-level BPE)', () => {
    const rng = new Rng(7);
    const pool = ['日本語のテキスト', '👨‍👩‍👧', '👍🏽', 'é', 'e\u0301', 'שלום', ' the', '\r\n', '\uFFFD', 'ß', '𝔘'];
    for (let trial = 0; trial < 400; trial++) {
      const ids: number[] = [];
      const parts = 1 + Math.floor(rng.next() * 8);
      for (let k = 0; k < parts; k++) ids.push(...bundled.encode(pool[Math.floor(rng.next() * pool.length)] as string));
      // Half the trials get stray bytes (a model can produce invalid UTF-8).
      if (trial % 2 === 1)
        for (let k = 0; k < 3; k++)
          ids.splice(Math.floor(rng.next() * (ids.length + 1)), 0, 1 + Math.floor(rng.next() * 255));
      const d = new IncrementalDecoder(bundled);
      let streamed = '';
      for (let i = 0; i < ids.length; ) {
        // Rounds may add nothing (every draft rejected and no token of the target's: a generation's last round).
        const k = Math.floor(rng.next() * 6);
        streamed += d.push(ids.slice(i, i + k)).join('');
        i += k;
      }
      // An incomplete character at the very end is held back.
      expect(d.text, JSON.stringify(ids)).toBe(bundled.decode(ids).replace(/\uFFFD+$/, ''));
      expect(streamed).toBe(d.text);
    }
  });

  it('decodes nothing for a round that adds nothing, and twice for a token (the window before it is kept)', () => {
    let decodes = 0;
    const counting = {
      decode: (ids: readonly number[]) => {
        decodes++;
        return bundled.decode(ids);
      },
    };
    const d = new IncrementalDecoder(counting, bundled.encode('It is a truth'));
    d.push(bundled.encode(' universally'));
    const before = decodes;
    expect(d.push([])).toEqual([]);
    expect(d.preview([])).toEqual([]);
    expect(decodes).toBe(before);
    const [word] = bundled.encode(' that');
    expect(d.push([word as number])).toEqual([' that']);
    // The token's text against the window's, which was kept from the last push, then the new window's.
    expect(decodes).toBe(before + 2);
  });

  it('emits a run of invalid bytes, or a real U+FFFD, as often as the whole text has it', () => {
    const continuation = bundled.encode('日').at(-1) as number; // a UTF-8 continuation byte alone
    const ids = [...bundled.encode('a'), ...Array<number>(12).fill(continuation), ...bundled.encode('b')];
    const d = new IncrementalDecoder(bundled);
    for (const t of ids) d.push([t]);
    expect(d.text).toBe(bundled.decode(ids));
    const real = [...bundled.encode('x \uFFFD\uFFFD👨‍👩‍👧 y.')];
    const r = new IncrementalDecoder(bundled);
    for (const t of real) r.push([t]);
    expect(r.text).toBe('x \uFFFD\uFFFD👨‍👩‍👧 y.');
  });

  it('completes a character a token-id prompt left unfinished', () => {
    const ids = bundled.encode('a日');
    const prompt = ids.slice(0, -1);
    const d = new IncrementalDecoder(bundled, prompt);
    expect(d.push(ids.slice(-1))).toEqual(['日']);
  });
});
