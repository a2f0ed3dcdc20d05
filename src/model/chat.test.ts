/** Chat templates through transformers.js's tokenizer: the exact prompt string, and the end-of-turn tokens. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { addedSpecialToken } from '../../tools/synthetic-tokenizer';
import { makeTokenizer } from './tokenizer';

const fixture = JSON.parse(readFileSync('tests/fixtures/chat-templates.json', 'utf8'));
const tokenizerJson = JSON.parse(readFileSync('public/models/austen-target/tokenizer.json', 'utf8'));
const tokenizerConfig = JSON.parse(readFileSync('public/models/austen-target/tokenizer_config.json', 'utf8'));

/** The bundled tokenizer plus ChatML's two special tokens (ids 4096, 4097), as chat models add them. */
function chatmlTokenizer() {
  const json = structuredClone(tokenizerJson);
  json.added_tokens.push(
    addedSpecialToken({ id: 4096, content: '<|im_start|>' }),
    addedSpecialToken({ id: 4097, content: '<|im_end|>' }),
  );
  return makeTokenizer(json, { ...tokenizerConfig, eos_token: '<|im_end|>', chat_template: fixture.chatml.template });
}

describe('chat templates', () => {
  it('ChatML: the exact prompt string, with and without a system message; <|im_end|> ends a turn', () => {
    const tok = chatmlTokenizer();
    expect(tok.hasChatTemplate).toBe(true);
    expect(tok.applyChatTemplate(fixture.messages)).toBe(fixture.chatml.expected);
    expect(tok.applyChatTemplate(fixture.messages.slice(1))).toBe(fixture.chatml.expected_without_system);
    expect(tok.endOfTurnTokens).toEqual([4097]);
    // Encoded without added special tokens, the template's markers are single tokens.
    const ids = tok.encode(fixture.chatml.expected, { addSpecialTokens: false });
    expect(ids[0]).toBe(4096);
    expect(ids.filter((i) => i === 4097)).toHaveLength(2);
  });

  it('a template ending turns with <|endoftext|>, and a tokenizer without a template', () => {
    const tok = makeTokenizer(tokenizerJson, { ...tokenizerConfig, chat_template: fixture.austen.template });
    expect(tok.applyChatTemplate(fixture.messages)).toBe(fixture.austen.expected);
    expect(tok.endOfTurnTokens).toEqual([0]);
    const plain = makeTokenizer(tokenizerJson, tokenizerConfig);
    expect(plain.hasChatTemplate).toBe(false);
    expect(() => plain.applyChatTemplate(fixture.messages)).toThrow(/no chat template/);
  });
});
