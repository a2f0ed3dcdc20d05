/**
 * The token tree the target verified in one round: depth left to right, the accepted path highlighted, rejected
 * children in red, branches never reached faded, with a key. Under merged drafting a stripe on each node says which
 * drafter proposed it (a second key); nodes that rode along in the call unverified (lookahead's Jacobi window) are
 * listed greyed below the tree. Labels are SVG text nodes (never HTML).
 *
 * @csspart tree - the SVG
 * @csspart key - the key to node colours and label markers
 * @csspart source-key - which colour is which drafter (merged drafting)
 * @csspart aux - the auxiliary nodes of the round
 * @cssproperty --sd-source-1 - colour of the first drafter named in a run (then --sd-source-2 … -4)
 */
import { css, html, LitElement, nothing, svg } from 'lit';
import { property } from 'lit/decorators.js';
import type { RoundEvent } from '../engine/events';
import { childrenOf } from '../engine/tree';
import { cssProps } from './css-props';
import { defineOnce } from './define';
import { tokenColours } from './theme';

const COL = 92;
const ROW = 22;

/** y slot of every node: leaves in depth-first order, parents centred over their children. */
export function layoutTree(parents: readonly number[]): { x: number[]; y: number[]; rows: number } {
  const children = childrenOf(parents);
  const x: number[] = [];
  const y: number[] = [];
  let next = 0;
  const place = (n: number, depth: number): number => {
    x[n] = depth;
    const kids = children[n] as number[];
    if (kids.length === 0) y[n] = next++;
    else {
      const ys = kids.map((k) => place(k, depth + 1));
      y[n] = ((ys[0] as number) + (ys[ys.length - 1] as number)) / 2;
    }
    return y[n] as number;
  };
  if (parents.length > 0) place(0, 0);
  return { x, y, rows: Math.max(next, 1) };
}

/** Colours for the drafters that proposed nodes, in the order they first appear in a run. */
const SOURCE_COLOURS = ['#8250df', '#bc4c00', '#1b7c83', '#bf3989'];
const sourceColour = (i: number) =>
  `var(--sd-source-${(i % SOURCE_COLOURS.length) + 1}, ${SOURCE_COLOURS[i % SOURCE_COLOURS.length]})`;

const label = (text: string) => {
  const shown = text.replace(/ /g, '·').replace(/\n/g, '⏎');
  return shown.length > 10 ? `${shown.slice(0, 9)}…` : shown || '∅';
};

/**
 * The tree in words, for a screen reader: its size, the accepted path's text, and which drafters proposed its nodes
 * (on screen a coloured stripe, which neither a screen reader nor forced colours keep).
 */
function treeLabel(t: TreeView['tree'] & object): string {
  const accepted = t.status.flatMap((s, i) => (s === 'accepted' && i > 0 ? [t.texts[i] ?? ''] : []));
  const path = accepted.length > 0 ? `: accepted "${accepted.join('')}"` : '';
  const by = new Map<string, number>();
  for (const s of t.sources?.slice(1) ?? []) by.set(s, (by.get(s) ?? 0) + 1);
  const sources = by.size > 1 ? `; proposed by ${[...by].map(([s, n]) => `${s} ${n}`).join(', ')}` : '';
  return `token tree of the round: ${t.tokens.length} nodes, ${accepted.length} draft tokens accepted${path}${sources}`;
}

@defineOnce('sd-tree-view')
export class TreeView extends LitElement {
  static override styles = [
    tokenColours,
    css`
      :host {
        display: block;
        overflow-x: auto;
      }
      svg {
        font: 12px ui-monospace, monospace;
      }
      line {
        stroke: var(--_sd-muted);
        stroke-width: 1;
      }
      line.accepted {
        stroke: var(--_sd-accepted);
        stroke-width: 2.5;
      }
      /* Unreached nodes (after a rejection on their path) are dotted with muted labels, not faded: faded, their labels
         fell to 2.4:1 against the background. */
      g.unreached rect {
        stroke-dasharray: 1 3;
      }
      g.unreached text {
        fill: var(--_sd-muted);
      }
      g rect {
        fill: Canvas;
        stroke: var(--_sd-muted);
      }
      g.root rect {
        stroke: var(--_sd-target);
        stroke-width: 2;
      }
      g.accepted rect {
        fill: var(--_sd-accepted-bg);
        stroke: var(--_sd-accepted);
        stroke-width: 2;
      }
      g.rejected rect {
        fill: var(--_sd-rejected-bg);
        stroke: var(--_sd-rejected);
        stroke-dasharray: 3 2;
      }
      g rect.source {
        stroke: none !important;
      }
      text {
        fill: CanvasText;
      }
      /* Forced colours (Windows high contrast): the page's colours give way to the system's, so the accepted path is
         drawn in Highlight with HighlightText labels (its own light green kept white labels on it, unreadable). */
      @media (forced-colors: active) {
        line.accepted,
        g.accepted rect {
          stroke: Highlight;
        }
        g.accepted rect {
          fill: Highlight;
        }
        g.accepted text {
          fill: HighlightText;
        }
        g.rejected rect {
          fill: Canvas;
          stroke: CanvasText;
        }
        .swatch.accepted {
          forced-color-adjust: none;
          background: Highlight;
          border-color: Highlight;
        }
      }
      .key,
      .aux {
        display: flex;
        flex-wrap: wrap;
        gap: 0.25rem 0.75rem;
        align-items: center;
        /* sizes the page already uses: a new font size first drawn mid-run costs a font lookup on the main thread */
        font-size: 0.85rem;
        color: var(--_sd-muted);
        margin-top: 0.25rem;
      }
      .swatch {
        display: inline-block;
        width: 0.9em;
        height: 0.9em;
        vertical-align: -0.1em;
        margin-right: 0.25em;
        border: 1px solid var(--_sd-muted);
        border-radius: 2px;
        background: Canvas;
      }
      .swatch.root {
        border: 2px solid var(--_sd-target);
      }
      .swatch.accepted {
        border: 2px solid var(--_sd-accepted);
        background: var(--_sd-accepted-bg);
      }
      .swatch.rejected {
        border: 1px dashed var(--_sd-rejected);
        background: var(--_sd-rejected-bg);
      }
      .swatch.unreached {
        border-style: dotted;
      }
      .aux [data-aux] {
        font: 12px ui-monospace, monospace;
        border: 1px dotted var(--_sd-muted);
        border-radius: 3px;
        padding: 0 3px;
        white-space: pre;
      }
    `,
  ];

  @property({ attribute: false }) tree: RoundEvent['tree'] | null = null;
  /** Every drafter named in the run, in order of appearance, so each keeps its colour from round to round. */
  @property({ attribute: false }) sources: string[] = [];

  private sourceIndex(t: RoundEvent['tree']): Map<string, number> {
    const order = [...this.sources];
    for (const s of t.sources?.slice(1) ?? []) if (!order.includes(s)) order.push(s);
    return new Map(order.map((s, i) => [s, i]));
  }

  private renderKey() {
    return html`<div class="key" part="key">
      <span><i class="swatch root"></i>root (last token)</span>
      <span><i class="swatch accepted"></i>accepted</span>
      <span><i class="swatch rejected"></i>rejected</span>
      <span><i class="swatch unreached"></i>unreached (never checked)</span>
      <span>· = space</span>
      <span>⏎ = newline</span>
    </div>`;
  }

  private renderSourceKey(t: RoundEvent['tree'], index: Map<string, number>) {
    const used = new Set(t.sources?.slice(1));
    if (used.size === 0) return nothing;
    return html`<div class="key" part="source-key">
      proposed by:
      ${[...index]
        .filter(([s]) => used.has(s))
        .map(
          ([s, i]) =>
            html`<span data-source=${s}><i class="swatch" style=${cssProps({ background: sourceColour(i) })}></i>${s}</span>`,
        )}
    </div>`;
  }

  private renderAux(t: RoundEvent['tree']) {
    if (!t.aux || t.aux.tokens.length === 0) return nothing;
    return html`<div class="aux" part="aux">
      lookahead window (rode along, not verified):
      ${t.aux.texts.map((text, i) => html`<span data-aux=${t.aux?.tokens[i] ?? ''}>${label(text)}</span>`)}
    </div>`;
  }

  override render() {
    const t = this.tree;
    if (!t || t.tokens.length === 0) return nothing;
    const { x, y, rows } = layoutTree(t.parents);
    const depth = Math.max(...x);
    const px = (n: number) => 8 + (x[n] as number) * COL;
    const py = (n: number) => 6 + (y[n] as number) * ROW;
    const width = 8 + (depth + 1) * COL;
    const height = 12 + rows * ROW;
    const index = this.sourceIndex(t);
    return html`<svg
        part="tree"
        role="img"
        aria-label=${treeLabel(t)}
        width=${width}
        height=${height}
        viewBox=${`0 0 ${width} ${height}`}
      >
        ${t.parents.map((p, i) =>
          p < 0
            ? nothing
            : svg`<line class=${t.status[i] === 'accepted' ? 'accepted' : ''} x1=${px(p) + COL - 16} y1=${py(p) + 8}
              x2=${px(i)} y2=${py(i) + 8}></line>`,
        )}
        ${t.tokens.map((_, i) => {
          const source = t.sources?.[i];
          const stripe =
            source !== undefined && i > 0
              ? svg`<rect class="source" x=${px(i) + 1} y=${py(i) + 1} width="4" height=${ROW - 8}
                  style=${cssProps({ fill: sourceColour(index.get(source) ?? 0) })}><title>${`proposed by ${source}`}</title></rect>`
              : nothing;
          return svg`<g class=${t.status[i] ?? 'unreached'} data-status=${t.status[i] ?? 'unreached'}
            data-source=${source ?? nothing}>
            <rect x=${px(i)} y=${py(i)} width=${COL - 16} height=${ROW - 6} rx="3"></rect>${stripe}
            <text x=${px(i) + (stripe === nothing ? 4 : 8)} y=${py(i) + 12}>${label(t.texts[i] ?? '')}</text>
          </g>`;
        })}
      </svg>
      ${this.renderKey()} ${this.renderSourceKey(t, index)} ${this.renderAux(t)}`;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'sd-tree-view': TreeView;
  }
}
