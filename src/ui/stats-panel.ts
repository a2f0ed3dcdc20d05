/** Live numbers: tau, tokens/s, acceptance per depth (a small bar chart) and the race against plain decoding. */
import { css, html, LitElement, nothing } from 'lit';
import { property } from 'lit/decorators.js';
import type { GenerationStats } from '../engine/events';
import { armsText } from '../engine/stats';
import { cssProps } from './css-props';
import { defineOnce } from './define';
import { tokenColours } from './theme';

export interface RaceResult {
  speculative: number;
  plain: number;
}

@defineOnce('sd-stats-panel')
export class StatsPanel extends LitElement {
  static override styles = [
    tokenColours,
    css`
      :host {
        display: block;
        font-size: 0.9rem;
      }
      dl {
        display: grid;
        grid-template-columns: max-content 1fr;
        gap: 0.15rem 0.75rem;
        margin: 0 0 0.5rem;
      }
      dt {
        color: var(--_sd-muted);
      }
      dd {
        margin: 0;
        font-variant-numeric: tabular-nums;
      }
      /* Deep trees (up to 16 depths and more) scroll inside the panel's column instead of running under the tree. */
      .depths {
        overflow-x: auto;
      }
      .bars {
        width: max-content;
        display: flex;
        align-items: flex-end;
        gap: 3px;
        height: 72px;
        border-bottom: 1px solid var(--_sd-muted);
      }
      .col {
        width: 28px;
        height: 100%;
        display: flex;
        flex-direction: column;
        justify-content: flex-end;
        align-items: center;
      }
      .pct {
        font-size: 0.7rem;
        color: var(--_sd-muted);
      }
      .bar {
        width: 100%;
        background: var(--_sd-accepted);
      }
      /* Forced colours turned the bars' background into the page's own (blank bars on a blank page). */
      @media (forced-colors: active) {
        .bar {
          forced-color-adjust: none;
          background: Highlight;
        }
      }
      .axis {
        width: max-content;
        display: flex;
        gap: 3px;
        font-size: 0.7rem;
        color: var(--_sd-muted);
      }
      .axis span {
        width: 28px;
        text-align: center;
      }
    `,
  ];

  @property({ attribute: false }) stats: GenerationStats | null = null;
  @property({ attribute: false }) race: RaceResult | null = null;

  override render() {
    const s = this.stats;
    if (!s) return html`<p part="stats-empty">No run yet.</p>`;
    const depth = s.acceptanceByDepth;
    return html`<dl part="stats">
        <dt>tau (tokens per target call)</dt>
        <dd data-stat="tau">${s.tau.toFixed(2)}</dd>
        <dt>tokens/s</dt>
        <dd data-stat="tokens-per-second">${s.tokensPerSecond.toFixed(1)}</dd>
        <dt>target / draft calls</dt>
        <dd data-stat="calls">${s.targetCalls} / ${s.draftCalls}</dd>
        <dt>time outside model calls</dt>
        <dd data-stat="overhead">${(100 * s.overheadShare).toFixed(1)}%</dd>
        ${s.arms ? html`<dt>rounds per drafter</dt><dd data-stat="arms">${armsText(s.arms)}</dd>` : nothing}
        ${
          this.race
            ? html`<dt>speedup vs plain decoding</dt>
                <dd data-stat="speedup">
                  ${(this.race.speculative / this.race.plain).toFixed(2)}x (${this.race.speculative.toFixed(1)} vs
                  ${this.race.plain.toFixed(1)} tok/s)
                </dd>`
            : nothing
        }
      </dl>
      ${
        depth.length > 0
          ? html`<div part="acceptance">
              <div
                class="depths"
                role="img"
                aria-label=${`accepted at each tree depth: ${depth.map((a, d) => `depth ${d + 1} ${Math.round(100 * a)}%`).join(', ')}`}
              ><div class="bars">
                ${depth.map(
                  (a, d) =>
                    html`<div class="col" title=${`depth ${d + 1}: ${(100 * a).toFixed(0)}% accepted`}>
                      <span class="pct" data-depth=${d + 1}>${Math.round(100 * a)}%</span>
                      <div class="bar" style=${cssProps({ height: `${Math.round(a * 100) * 0.75}%` })}></div>
                    </div>`,
                )}
              </div>
              <div class="axis">${depth.map((_, d) => html`<span>${d + 1}</span>`)}</div></div>
              <small>accepted at each tree depth</small>
            </div>`
          : nothing
      }`;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'sd-stats-panel': StatsPanel;
  }
}
