/**
 * <sd-chat>: the conversation of <spec-decoder mode="chat">. It keeps the messages, shows user turns as text and
 * each assistant reply as a token stream in the three colours, and asks its host to generate.
 *
 * @event sd-chat-send - detail {messages}: the whole conversation so far, ending with the new user message; the host
 *   generates and feeds the reply back with addRound() and finishReply() (or failReply()).
 * @csspart turn - one message; also `turn-user`, `turn-assistant`
 * @csspart input - the message box
 * @csspart send - the send button
 */
import { css, html, LitElement, nothing } from 'lit';
import { property, query, state } from 'lit/decorators.js';
import type { RoundEvent } from '../engine/events';
import type { ChatMessage } from '../model/tokenizer';
import { tokenColours } from './theme';
import './token-stream';
import { defineOnce } from './define';

interface Turn {
  role: 'user' | 'assistant';
  content: string;
  /** Assistant turns: the rounds that produced it, for the colours. */
  rounds?: RoundEvent[];
}

export interface ChatSendDetail {
  messages: ChatMessage[];
}

@defineOnce('sd-chat')
export class ChatView extends LitElement {
  static override styles = [
    tokenColours,
    css`
      :host {
        display: block;
      }
      .turn {
        margin: 0.4rem 0;
        padding: 0.4rem 0.6rem;
        border-radius: 6px;
      }
      .turn[data-role='user'] {
        background: color-mix(in srgb, var(--_sd-muted) 12%, transparent);
        white-space: pre-wrap;
      }
      .role {
        font-size: 0.75rem;
        color: var(--_sd-muted);
        text-transform: uppercase;
      }
      textarea {
        width: 100%;
        box-sizing: border-box;
        font: inherit;
        min-height: 3rem;
      }
      .bar {
        display: flex;
        gap: 0.5rem;
        align-items: center;
        margin-top: 0.4rem;
      }
    `,
  ];

  /** A system message sent before the conversation (empty: none). */
  @property() system = '';
  /** The host is loading or generating: input waits. */
  @property({ type: Boolean }) busy = false;
  /** Tokens that end a turn (not shown). */
  @property({ attribute: false }) stopTokens: number[] = [];
  /** As the token stream's (the element passes its own): each round in a box of its own; rejected drafts not shown. */
  @property({ type: Boolean, attribute: 'group-rounds' }) groupRounds = false;
  @property({ type: Boolean, attribute: 'hide-rejected' }) hideRejected = false;

  @state() private turns: Turn[] = [];
  @query('textarea.message') private box!: HTMLTextAreaElement;
  /**
   * A message was sent from here: the message box gets the focus back once the reply (or its error) is in. Disabled
   * while the host was busy, the box had lost it to the page's body for good.
   */
  private refocus = false;

  override updated(changed: Map<string, unknown>): void {
    if (changed.has('busy') && !this.busy && this.refocus) {
      this.refocus = false;
      this.box?.focus();
    }
  }

  /** The conversation as messages (system first when set). */
  get messages(): ChatMessage[] {
    const system = this.system.trim() ? [{ role: 'system' as const, content: this.system }] : [];
    return [...system, ...this.turns.map((t) => ({ role: t.role, content: t.content }))];
  }

  /** Add a user message and ask the host for the reply. */
  send(text: string = this.box?.value ?? ''): void {
    if (!text.trim() || this.busy) return;
    this.turns = [...this.turns, { role: 'user', content: text }, { role: 'assistant', content: '', rounds: [] }];
    if (this.box) this.box.value = '';
    this.refocus = true;
    const messages = this.messages.slice(0, -1); // without the empty reply
    this.dispatchEvent(
      new CustomEvent<ChatSendDetail>('sd-chat-send', { detail: { messages }, bubbles: true, composed: true }),
    );
  }

  private get reply(): Turn | undefined {
    const last = this.turns.at(-1);
    return last?.role === 'assistant' ? last : undefined;
  }

  /** One round of the reply being generated (end-of-turn tokens are dropped from view). */
  addRound(e: RoundEvent): void {
    const reply = this.reply;
    if (!reply) return;
    const stop = new Set(this.stopTokens);
    const keep = (pieces: RoundEvent['accepted']) => pieces.filter((p) => !stop.has(p.id));
    const shown = { ...e, accepted: keep(e.accepted), target: keep(e.target), rejected: keep(e.rejected) };
    reply.rounds = [...(reply.rounds ?? []), shown];
    reply.content += [...shown.accepted, ...shown.target].map((p) => p.text).join('');
    this.turns = [...this.turns];
  }

  /** The reply is complete. */
  finishReply(): void {
    this.turns = [...this.turns];
  }

  /**
   * The reply failed. Before its first token: drop it and its question, and put the question back in the box. Part-way:
   * what it made stays in the conversation (nothing generated is lost; the host shows the error).
   */
  failReply(): void {
    // Something shown (not only end-of-turn tokens, which are dropped from view).
    if (this.reply?.content) {
      this.turns = [...this.turns];
      return;
    }
    const question = this.turns.at(-2);
    this.turns = this.turns.slice(0, -2);
    if (question && this.box) this.box.value = question.content;
  }

  clear(): void {
    this.turns = [];
  }

  override render() {
    return html`
      <label>System <input part="system" .value=${this.system} @input=${(e: Event) => {
        this.system = (e.target as HTMLInputElement).value;
      }} ?disabled=${this.busy || this.turns.length > 0} /></label>
      ${this.turns.map((t, i) =>
        t.role === 'user'
          ? html`<div class="turn" data-role="user" part="turn turn-user"><div class="role">you</div>${t.content}</div>`
          : html`<div class="turn" data-role="assistant" part="turn turn-assistant">
              <div class="role">assistant</div>
              <sd-token-stream
                .rounds=${t.rounds ?? []}
                ?busy=${this.busy && i === this.turns.length - 1}
                ?group-rounds=${this.groupRounds}
                ?hide-rejected=${this.hideRejected}
              ></sd-token-stream>
            </div>`,
      )}
      <textarea
        class="message"
        part="input"
        aria-label="Message"
        placeholder="Message"
        ?disabled=${this.busy}
        @keydown=${(e: KeyboardEvent) => {
          if (e.key === 'Enter' && !e.shiftKey) {
            e.preventDefault();
            this.send();
          }
        }}
      ></textarea>
      <div class="bar">
        <button part="send" @click=${() => this.send()} ?disabled=${this.busy}>Send</button>
        ${this.turns.length > 0 ? html`<button part="new-chat" @click=${() => this.clear()} ?disabled=${this.busy}>New chat</button>` : nothing}
      </div>
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'sd-chat': ChatView;
  }
  interface HTMLElementEventMap {
    'sd-chat-send': CustomEvent<ChatSendDetail>;
  }
}
