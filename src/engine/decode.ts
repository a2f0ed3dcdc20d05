/**
 * Incremental detokenisation: the text a token adds in context. Byte-level BPE tokens can split a UTF-8
 * character, so each piece is the difference between decoding a short window with and without the new tokens;
 * a piece ending in an incomplete character is held back until the character completes.
 */
import type { TextTokenizer } from '../model/tokenizer';

const WINDOW = 8;

/** Text without a trailing incomplete character (decoded as U+FFFD): it is emitted once complete. */
const stable = (text: string) => text.replace(/\uFFFD+$/, '');

export class IncrementalDecoder {
  private ids: number[] = [];
  /** Text emitted so far for `ids`. */
  text = '';

  constructor(private readonly tokenizer: Pick<TextTokenizer, 'decode'>) {}

  private decode(ids: readonly number[]): string {
    return ids.length === 0 ? '' : this.tokenizer.decode(ids);
  }

  /** Pieces for `added`, as if appended after the committed tokens (does not commit them). */
  preview(added: readonly number[]): string[] {
    const base = this.ids.slice(-WINDOW);
    let emitted = stable(this.decode(base)).length;
    return added.map((_, i) => {
      const full = stable(this.decode([...base, ...added.slice(0, i + 1)]));
      const piece = full.slice(emitted);
      emitted = Math.max(emitted, full.length);
      return piece;
    });
  }

  /** Commit tokens; returns their pieces. */
  push(added: readonly number[]): string[] {
    const pieces = this.preview(added);
    this.ids.push(...added);
    this.text += pieces.join('');
    return pieces;
  }

  reset(): void {
    this.ids = [];
    this.text = '';
  }
}
