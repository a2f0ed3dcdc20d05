/**
 * Incremental detokenisation: the text tokens add in context (the prefix/read offsets of Hugging Face's TextStreamer
 * and TGI). A piece is what decoding the tokens since the last emitted chunk adds to that chunk's own text, so
 * - a decoder that strips a leading space (SentencePiece's Strip in Llama, Mistral, TinyLlama) strips it from the
 *   window's first token, never from the new one: the first generated word keeps its space, because the decoder
 *   starts from the prompt's last tokens;
 * - byte-level tokens that split a UTF-8 character are held back (their text ends in U+FFFD) until it completes,
 *   and the window keeps every held-back token, so a run of invalid bytes or a real U+FFFD in the text comes out
 *   as often as decoding the whole text gives it, never doubled by a window that starts inside a character.
 * Text still held back when a generation ends (an incomplete character) is not emitted.
 */
import type { TextTokenizer } from '../model/tokenizer';

/** Prompt tokens the decoder starts from: the context of the first generated token's text. */
const CONTEXT = 4;

const incomplete = (text: string) => text.endsWith('\uFFFD');

export class IncrementalDecoder {
  /** The window: ids[prefix, read) decode to the last emitted chunk (its context); ids[read, ) are held back. */
  private readonly ids: number[];
  private prefix = 0;
  private read: number;
  /** The text of ids[prefix, read): what the next token's text is told apart from. */
  private window: string;
  /** Text emitted so far (the prompt's context not included). */
  text = '';

  constructor(
    private readonly tokenizer: Pick<TextTokenizer, 'decode'>,
    context: readonly number[] = [],
  ) {
    this.ids = context.slice(-CONTEXT);
    // A context ending inside a character (a prompt given as token ids): its incomplete tail is held back with the
    // tokens that complete it.
    let read = this.ids.length;
    let window = this.decode(this.ids);
    while (read > 0 && incomplete(window)) window = this.decode(this.ids.slice(0, --read));
    this.read = read;
    this.window = window;
  }

  private decode(ids: readonly number[]): string {
    return ids.length === 0 ? '' : this.tokenizer.decode(ids);
  }

  /** Pieces for `added`, as if appended after the committed tokens (does not commit them). */
  preview(added: readonly number[]): string[] {
    return this.step(added).pieces;
  }

  /** Commit tokens; returns their pieces. */
  push(added: readonly number[]): string[] {
    const { pieces, prefix, read, window } = this.step(added);
    this.window = window;
    this.ids.push(...added);
    // Only the window is needed from here on: what came before it is let go (a long generation copied it all).
    this.ids.splice(0, prefix);
    this.prefix = 0;
    this.read = read - prefix;
    this.text += pieces.join('');
    return pieces;
  }

  /** Each added token's piece ('' while held back), and the offsets and the window's text after them. */
  private step(added: readonly number[]): { pieces: string[]; prefix: number; read: number; window: string } {
    // Nothing added (a round whose drafts were all rejected, or with none): nothing to decode.
    if (added.length === 0) return { pieces: [], prefix: this.prefix, read: this.read, window: this.window };
    const ids = [...this.ids];
    let { prefix, read } = this;
    let before = this.window;
    const pieces = added.map((token) => {
      ids.push(token);
      const after = this.decode(ids.slice(prefix));
      if (after.length <= before.length || incomplete(after)) return '';
      const piece = after.slice(before.length);
      prefix = read;
      read = ids.length;
      before = this.decode(ids.slice(prefix, read));
      return piece;
    });
    return { pieces, prefix, read, window: before };
  }
}
