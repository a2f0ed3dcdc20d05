/**
 * <sd-model-picker>: choose the model pair: the bundled pair, curated hub pairs that share a tokenizer (each with
 * its download size), or any hub ids. It shows which hub models this browser has cached (and so which pairs work
 * offline), what the cache holds and its size, and clears it.
 *
 * @event sd-model-change - detail ModelPair: the pair chosen (target, draft, chat)
 * @csspart pairs - the pair menu
 * @csspart custom - the custom hub id fields
 * @csspart cache - the cache summary, its list and clear buttons
 */
import { css, html, LitElement, nothing } from 'lit';
import { property, state } from 'lit/decorators.js';
import { type CachedRepo, clearCachedModels, listCachedModels, storageEstimate } from '../model/hub/cache-admin';
import { defineOnce } from './define';

export interface ModelPair {
  id: string;
  label: string;
  target: string;
  draft: string;
  /** Approximate download size of both models in bytes (0: bundled with the page). */
  bytes: number;
  /** The target has a chat template. */
  chat: boolean;
}

/** The pairs on offer. Sizes are the safetensors and tokenizer files of both repos (approximate). */
export const CURATED_PAIRS: ModelPair[] = [
  {
    id: 'bundled',
    label: 'Austen pair (bundled, tiny)',
    target: 'models/austen-target/',
    draft: 'models/austen-draft/',
    bytes: 0,
    chat: false,
  },
  {
    id: 'smollm2',
    label: 'SmolLM2-360M-Instruct + SmolLM2-135M-Instruct',
    target: 'hf:HuggingFaceTB/SmolLM2-360M-Instruct',
    draft: 'hf:HuggingFaceTB/SmolLM2-135M-Instruct',
    bytes: 1_000_000_000,
    chat: true,
  },
  {
    id: 'qwen2.5',
    label: 'Qwen2.5-1.5B-Instruct + Qwen2.5-0.5B-Instruct',
    target: 'hf:Qwen/Qwen2.5-1.5B-Instruct',
    draft: 'hf:Qwen/Qwen2.5-0.5B-Instruct',
    bytes: 4_100_000_000,
    chat: true,
  },
];

const repoOf = (spec: string) => /^hf:([^@]+)/.exec(spec)?.[1];

export function formatBytes(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(1)} GB`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(n >= 1e8 ? 0 : 1)} MB`;
  return `${Math.round(n / 1e3)} kB`;
}

/** A hub repo is usable offline when its config, tokenizer and weights are cached. */
function usable(repo: CachedRepo | undefined): boolean {
  const files = new Set(repo?.files.map((f) => f.file));
  return files.has('config.json') && files.has('tokenizer.json') && [...files].some((f) => f.endsWith('.safetensors'));
}

@defineOnce('sd-model-picker')
export class ModelPicker extends LitElement {
  static override styles = css`
    :host {
      display: block;
      font-size: 0.9rem;
    }
    .row {
      display: flex;
      flex-wrap: wrap;
      gap: 0.5rem;
      align-items: center;
      margin: 0.3rem 0;
    }
    input[type='text'] {
      width: 18rem;
      max-width: 100%;
    }
    /* A phone-wide page: the options' long labels made the select 474 px wide; it shrinks with its row instead. */
    .row > label {
      min-width: 0;
      max-width: 100%;
    }
    select {
      max-width: 100%;
    }
    .muted {
      color: light-dark(#6e7781, #8b949e);
    }
    ul {
      margin: 0.3rem 0;
      padding-left: 1.2rem;
    }
  `;

  /** The pairs offered (default: the bundled pair and the curated hub pairs). */
  @property({ attribute: false }) pairs: ModelPair[] = CURATED_PAIRS;
  /** The pair selected (its id, or "custom"). */
  @property() selected = 'bundled';

  @state() private cached: CachedRepo[] = [];
  @state() private usage: { usage: number; quota: number } | null = null;
  @state() private online = typeof navigator === 'undefined' ? true : navigator.onLine;
  @state() private message = '';
  private customTarget = '';
  private customDraft = '';

  private readonly onOnline = () => {
    this.online = navigator.onLine;
  };

  override connectedCallback(): void {
    super.connectedCallback();
    addEventListener('online', this.onOnline);
    addEventListener('offline', this.onOnline);
    void this.refresh();
  }

  override disconnectedCallback(): void {
    super.disconnectedCallback();
    removeEventListener('online', this.onOnline);
    removeEventListener('offline', this.onOnline);
  }

  /** Read the cache again (after a load, or a clear). */
  async refresh(): Promise<void> {
    try {
      this.cached = await listCachedModels();
      this.usage = await storageEstimate();
    } catch (e) {
      this.message = `cannot read the browser cache: ${(e as Error).message}`;
    }
  }

  private cachedRepo(spec: string): CachedRepo | undefined {
    const repo = repoOf(spec);
    return repo === undefined ? undefined : this.cached.find((c) => c.repo === repo);
  }

  /** Bundled: always; hub pairs: when both models are cached, or when online. */
  available(pair: ModelPair): { ok: boolean; note: string } {
    const hub = [pair.target, pair.draft].filter((s) => s.startsWith('hf:'));
    if (hub.length === 0) return { ok: true, note: 'bundled' };
    const all = hub.every((s) => usable(this.cachedRepo(s)));
    if (all) return { ok: true, note: 'cached, works offline' };
    return this.online
      ? { ok: true, note: `download about ${formatBytes(pair.bytes)}` }
      : { ok: false, note: 'not cached: needs a network' };
  }

  private choose(id: string): void {
    this.selected = id;
    const pair =
      id === 'custom'
        ? {
            id,
            label: 'custom',
            target: this.customTarget.trim(),
            draft: this.customDraft.trim(),
            bytes: 0,
            chat: true,
          }
        : this.pairs.find((p) => p.id === id);
    if (!pair?.target) return;
    this.dispatchEvent(new CustomEvent<ModelPair>('sd-model-change', { detail: pair, bubbles: true, composed: true }));
  }

  private async clear(repo?: string): Promise<void> {
    const freed = await clearCachedModels(repo);
    this.message = `removed ${freed.files} files (${formatBytes(freed.bytes)})`;
    await this.refresh();
  }

  override render() {
    const total = this.cached.reduce((a, c) => a + c.bytes, 0);
    const hubId = (e: Event) => {
      const v = (e.target as HTMLInputElement).value.trim();
      return v && !v.startsWith('hf:') && /^[\w.-]+\/[\w.-]+/.test(v) ? `hf:${v}` : v;
    };
    return html`
      <div class="row" part="pairs">
        <label
          >Models
          <select
            data-testid="model-pair"
            @change=${(e: Event) => this.choose((e.target as HTMLSelectElement).value)}
          >
            ${this.pairs.map((p) => {
              const a = this.available(p);
              return html`<option value=${p.id} ?selected=${p.id === this.selected} ?disabled=${!a.ok}>
                ${p.label} (${a.note})
              </option>`;
            })}
            <option value="custom" ?selected=${this.selected === 'custom'}>any hub ids…</option>
          </select></label
        >
        ${this.online ? nothing : html`<small class="muted" data-testid="offline">offline: cached models only</small>`}
      </div>
      ${
        this.selected === 'custom'
          ? html`<div class="row" part="custom">
              <label>Target <input type="text" data-testid="custom-target" placeholder="org/name[@revision]"
                @change=${(e: Event) => {
                  this.customTarget = hubId(e);
                }} /></label>
              <label>Draft <input type="text" data-testid="custom-draft" placeholder="org/name (same tokenizer)"
                @change=${(e: Event) => {
                  this.customDraft = hubId(e);
                }} /></label>
              <button data-testid="custom-use" @click=${() => this.choose('custom')}>Use</button>
            </div>`
          : nothing
      }
      <details part="cache">
        <summary data-testid="cache-summary">
          Hub cache: ${this.cached.length} models, ${formatBytes(total)}${
            this.usage
              ? html` <span class="muted">(site storage ${formatBytes(this.usage.usage)} of ${formatBytes(this.usage.quota)})</span>`
              : nothing
          }
        </summary>
        <ul data-testid="cache-list">
          ${this.cached.map(
            (c) => html`<li>
              ${c.repo} @ ${c.revisions.join(', ')}: ${c.files.length} files, ${formatBytes(c.bytes)}
              <button aria-label=${`Remove ${c.repo}`} @click=${() => void this.clear(c.repo)}>Remove</button>
            </li>`,
          )}
        </ul>
        <button data-testid="cache-clear" @click=${() => void this.clear()} ?disabled=${this.cached.length === 0}>
          Clear the hub cache
        </button>
        <small class="muted" role="status" data-testid="cache-message">${this.message}</small>
      </details>
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'sd-model-picker': ModelPicker;
  }
  interface HTMLElementEventMap {
    'sd-model-change': CustomEvent<ModelPair>;
  }
}
