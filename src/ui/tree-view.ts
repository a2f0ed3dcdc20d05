/**
 * The token tree the target verified in one round: depth left to right, the accepted path highlighted, rejected
 * children in red, branches never reached faded. Labels are SVG text nodes (never HTML).
 */
import { css, html, LitElement, nothing, svg } from 'lit';
import { customElement, property } from 'lit/decorators.js';
import type { RoundEvent } from '../engine/events';
import { childrenOf } from '../engine/tree';
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

const label = (text: string) => {
  const shown = text.replace(/ /g, '·').replace(/\n/g, '⏎');
  return shown.length > 10 ? `${shown.slice(0, 9)}…` : shown || '∅';
};

@customElement('sd-tree-view')
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
        stroke: var(--sd-muted);
        stroke-width: 1;
      }
      line.accepted {
        stroke: var(--sd-accepted);
        stroke-width: 2.5;
      }
      g.unreached {
        opacity: 0.35;
      }
      g rect {
        fill: Canvas;
        stroke: var(--sd-muted);
      }
      g.root rect {
        stroke: var(--sd-target);
        stroke-width: 2;
      }
      g.accepted rect {
        fill: var(--sd-accepted-bg);
        stroke: var(--sd-accepted);
        stroke-width: 2;
      }
      g.rejected rect {
        fill: var(--sd-rejected-bg);
        stroke: var(--sd-rejected);
        stroke-dasharray: 3 2;
      }
      text {
        fill: CanvasText;
      }
    `,
  ];

  @property({ attribute: false }) tree: RoundEvent['tree'] | null = null;

  override render() {
    const t = this.tree;
    if (!t || t.tokens.length === 0) return nothing;
    const { x, y, rows } = layoutTree(t.parents);
    const depth = Math.max(...x);
    const px = (n: number) => 8 + (x[n] as number) * COL;
    const py = (n: number) => 6 + (y[n] as number) * ROW;
    const width = 8 + (depth + 1) * COL;
    const height = 12 + rows * ROW;
    return html`<svg
      part="tree"
      role="img"
      aria-label=${`token tree of round: ${t.tokens.length} nodes, ${t.status.filter((s) => s === 'accepted').length} accepted`}
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
      ${t.tokens.map(
        (_, i) => svg`<g class=${t.status[i] ?? 'unreached'} data-status=${t.status[i] ?? 'unreached'}>
          <rect x=${px(i)} y=${py(i)} width=${COL - 16} height=${ROW - 6} rx="3"></rect>
          <text x=${px(i) + 4} y=${py(i) + 12}>${label(t.texts[i] ?? '')}</text>
        </g>`,
      )}
    </svg>`;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'sd-tree-view': TreeView;
  }
}
