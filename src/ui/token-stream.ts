/**
 * The text as it is produced: accepted draft tokens (green, underlined), target tokens (blue, boxed) and the
 * rejected draft tokens (red, struck through) where the draft went wrong, kept after their round so a finished run
 * still shows them (`hide-rejected` leaves only the text itself). Colour is never the only cue. Token text is bound
 * as text, never as HTML. The stream is `white-space: pre-wrap`, so its template has no whitespace of its own.
 *
 * For a screen reader the stream is the text itself: rejected tokens are hidden from it (read aloud they garbled
 * the sentence), the prompt stays out of the live region (every run began by reading it again), and the region is
 * busy while a run streams, so the text is announced when it is done rather than token by token.
 */
import { css, html, LitElement, nothing } from 'lit';
import { property } from 'lit/decorators.js';
import type { RoundEvent, TokenPiece } from '../engine/events';
import { defineOnce } from './define';
import { tokenColours } from './theme';

type Kind = 'accepted' | 'rejected' | 'target';

@defineOnce('sd-token-stream')
export class TokenStream extends LitElement {
  static override styles = [
    tokenColours,
    css`
      :host {
        display: block;
      }
      .stream {
        white-space: pre-wrap;
        line-height: 1.9;
        font-family: ui-serif, Georgia, serif;
        font-size: 1.05rem;
      }
      .prompt {
        color: var(--_sd-muted);
      }
      .tok {
        border-radius: 2px;
      }
      .tok[data-kind='accepted'] {
        color: var(--_sd-accepted);
        background: var(--_sd-accepted-bg);
        text-decoration: underline solid var(--_sd-accepted);
        text-underline-offset: 3px;
      }
      .tok[data-kind='rejected'] {
        color: var(--_sd-rejected);
        background: var(--_sd-rejected-bg);
        text-decoration: line-through 2px var(--_sd-rejected);
      }
      .tok[data-kind='target'] {
        color: var(--_sd-target);
        background: var(--_sd-target-bg);
        outline: 1px dashed var(--_sd-target);
        outline-offset: -1px;
      }
      .round {
        border: 1px solid var(--_sd-muted);
        border-radius: 4px;
        padding: 0 2px;
        margin: 0 1px;
      }
    `,
  ];

  @property({ attribute: false }) prompt = '';
  @property({ attribute: false }) rounds: RoundEvent[] = [];
  /** Draw a box around each round's tokens, like Leviathan et al.'s Figure 1. */
  @property({ type: Boolean, attribute: 'group-rounds' }) groupRounds = false;
  /** Leave the rejected draft tokens out (the stream is then exactly the prompt and the generated text). */
  @property({ type: Boolean, attribute: 'hide-rejected' }) hideRejected = false;
  /** A run is streaming into it (aria-busy on the live region). */
  @property({ type: Boolean }) busy = false;

  private token(piece: TokenPiece, kind: Kind) {
    return html`<span
      class="tok"
      data-kind=${kind}
      part="token token-${kind}"
      title=${`${kind} token ${piece.id}`}
      aria-hidden=${kind === 'rejected' ? 'true' : nothing}
      >${piece.text}</span
    >`;
  }

  private round(e: RoundEvent) {
    const tokens = [
      ...e.accepted.map((p) => this.token(p, 'accepted')),
      ...(this.hideRejected ? [] : e.rejected.map((p) => this.token(p, 'rejected'))),
      ...e.target.map((p) => this.token(p, 'target')),
    ];
    return this.groupRounds ? html`<span class="round" part="round" data-round=${e.round}>${tokens}</span>` : tokens;
  }

  override render() {
    // biome-ignore format: the stream is pre-wrap: no whitespace between the tags
    return html`<div class="stream" part="stream">${this.prompt ? html`<span class="prompt" part="prompt">${this.prompt}</span>` : nothing}<span class="generated" part="generated" aria-live="polite" aria-atomic="false" aria-busy=${this.busy ? 'true' : 'false'}>${this.rounds.map((e) => this.round(e))}</span></div>`;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'sd-token-stream': TokenStream;
  }
}
