/**
 * The element and the page for people who do not see the colours, the screen, or either: what a screen reader
 * reads of the stream, the status and the controls; contrast in the light and the dark scheme; and a phone-wide
 * viewport without sideways scrolling. On wasm (fast); the tests share one page and run in order.
 */
import type { Page } from '@playwright/test';
import type { GenerationResult } from '../src/engine/events';
import { expect, sharedPage, test } from './fixtures';

const PROMPT = 'It is a truth universally acknowledged, that a single man';

let page: Page;
sharedPage(async (p) => {
  page = p;
  await page.goto('./');
});

/** Generate on the page's element; returns the result and every aria-busy value its live region showed. */
function generate(props: Record<string, unknown>): Promise<{ result: GenerationResult | null; busy: string[] }> {
  return page.evaluate(
    async ({ props, prompt }) => {
      const el = document.querySelector('spec-decoder') as HTMLElement & {
        generate(): Promise<GenerationResult | null>;
        updateComplete: Promise<boolean>;
      };
      Object.assign(el, props);
      await el.updateComplete;
      (el.shadowRoot?.querySelector('textarea') as HTMLTextAreaElement).value = prompt;
      const stream = el.shadowRoot?.querySelector('sd-token-stream') as HTMLElement & {
        updateComplete: Promise<boolean>;
      };
      const busy: string[] = [];
      const seen = () => {
        const v = stream.shadowRoot?.querySelector('[aria-live]')?.getAttribute('aria-busy') ?? 'none';
        if (busy[busy.length - 1] !== v) busy.push(v);
      };
      const watch = new MutationObserver(seen);
      watch.observe(stream.shadowRoot as ShadowRoot, { attributes: true, subtree: true, childList: true });
      const result = await el.generate();
      await el.updateComplete;
      await stream.updateComplete;
      seen();
      watch.disconnect();
      return { result, busy };
    },
    { props, prompt: PROMPT },
  );
}

/**
 * What assistive technology gets of the stream: the text of its live region with aria-hidden subtrees left out, the
 * region's politeness, and whether the prompt is inside it.
 */
function streamForScreenReaders() {
  return page.evaluate(() => {
    const el = document.querySelector('spec-decoder') as HTMLElement;
    const stream = el.shadowRoot?.querySelector('sd-token-stream') as HTMLElement;
    const root = stream.shadowRoot as ShadowRoot;
    const live = root.querySelector('[aria-live]') as HTMLElement;
    const text = (n: Node): string => {
      if (n instanceof HTMLElement && n.getAttribute('aria-hidden') === 'true') return '';
      if (n.nodeType === Node.TEXT_NODE) return n.textContent ?? '';
      return [...n.childNodes].map(text).join('');
    };
    return {
      politeness: live.getAttribute('aria-live'),
      text: text(live),
      promptInside: live.querySelector('[part="prompt"]') !== null,
      rejectedShown: root.querySelectorAll('[data-kind="rejected"]').length,
    };
  });
}

test('a screen reader hears the generated text: no rejected drafts, no prompt again, announced when the run is done', async () => {
  test.setTimeout(180_000);
  // A static tree on wasm rejects many of its drafted tokens.
  const { result, busy } = await generate({ method: 'tree', maxNewTokens: 24, device: 'wasm' });
  expect(result?.tokens.length).toBe(24);
  const heard = await streamForScreenReaders();
  expect(heard.rejectedShown, 'the run shows rejected drafts on screen').toBeGreaterThan(0);
  expect(heard.politeness).toBe('polite');
  expect(heard.promptInside).toBe(false);
  expect(heard.text).toBe(result?.text);
  // Busy while the run streamed, not busy once it was done.
  expect(busy).toContain('true');
  expect(busy[busy.length - 1]).toBe('false');
});

test('the status is announced, and the round slider says which round in words', async () => {
  const host = page.locator('spec-decoder');
  const status = host.locator('[part="status"]');
  await expect(status).toHaveAttribute('role', 'status');
  await expect(status).toHaveText(/\S/);
  // Notices are added to one live region that is always there (one that appears with its text is often missed).
  await expect(host.locator('[part="notices"]')).toHaveAttribute('role', 'status');
  const slider = host.locator('[part="tree"] input[type="range"]');
  const rounds = Number(await slider.getAttribute('max')) + 1;
  await slider.fill('0');
  await expect(slider).toHaveAttribute('aria-valuetext', `round 1 of ${rounds}`);
  await expect(slider).toHaveAccessibleName('Round');
  const tree = host.locator('sd-tree-view svg[role="img"]');
  await expect(tree).toHaveAttribute('aria-label', /^token tree of the round: \d+ nodes, \d+ draft tokens accepted/);
  const chart = host.locator('sd-stats-panel [role="img"]');
  await expect(chart).toHaveAttribute('aria-label', /^accepted at each tree depth: depth 1 \d+%/);
});

test("a merged tree's text alternative says which drafters proposed how many nodes (a stripe's colour on screen)", async () => {
  const label = await page.evaluate(async () => {
    const view = document.createElement('sd-tree-view') as HTMLElement & {
      tree: unknown;
      updateComplete: Promise<boolean>;
    };
    view.tree = {
      tokens: [1, 2, 3, 4, 5],
      texts: ['A', ' b', 'c', ' d', 'e'],
      parents: [-1, 0, 1, 0, 3],
      status: ['accepted', 'accepted', 'accepted', 'rejected', 'unreached'],
      sources: ['', 'lookup+draft', 'lookup', 'draft', 'draft'],
    };
    document.body.append(view);
    await view.updateComplete;
    const text = view.shadowRoot?.querySelector('svg[role="img"]')?.getAttribute('aria-label');
    view.remove();
    return text;
  });
  expect(label).toBe(
    'token tree of the round: 5 nodes, 2 draft tokens accepted: accepted " bc"; proposed by lookup+draft 1, lookup 1, draft 2',
  );
});

/** WCAG contrast ratio of two colours given as CSS rgb()/rgba() strings (alpha ignored). */
function contrastInPage() {
  return page.evaluate(() => {
    const rgb = (c: string) => (c.match(/[\d.]+/g) ?? []).slice(0, 3).map(Number);
    const lum = (c: string) => {
      const [r, g, b] = rgb(c).map((v) => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * (r as number) + 0.7152 * (g as number) + 0.0722 * (b as number);
    };
    const ratio = (a: string, b: string) => {
      const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x) as [number, number];
      return (hi + 0.05) / (lo + 0.05);
    };
    // The colour behind an element: the first opaque background up the tree (across shadow roots), else the canvas.
    const canvas = (() => {
      const probe = document.createElement('div');
      probe.style.background = 'Canvas';
      document.body.append(probe);
      const c = getComputedStyle(probe).backgroundColor;
      probe.remove();
      return c;
    })();
    const behind = (el: Element): string => {
      for (let n: Element | null = el; n; n = n.parentElement ?? ((n.getRootNode() as ShadowRoot).host || null)) {
        const bg = getComputedStyle(n).backgroundColor;
        if (!/rgba\(.*, 0\)$/.test(bg) && bg !== 'transparent') return bg;
      }
      return canvas;
    };
    const host = document.querySelector('spec-decoder') as HTMLElement;
    const root = host.shadowRoot as ShadowRoot;
    const streamRoot = root.querySelector('sd-token-stream')?.shadowRoot as ShadowRoot;
    const treeRoot = root.querySelector('sd-tree-view')?.shadowRoot as ShadowRoot;
    const out: Record<string, number> = {};
    const text = (name: string, el: Element | null | undefined) => {
      if (el) out[name] = ratio(getComputedStyle(el).color, behind(el));
    };
    for (const kind of ['accepted', 'rejected', 'target']) {
      text(`legend ${kind}`, root.querySelector(`.legend [data-kind="${kind}"]`));
      text(`token ${kind}`, streamRoot.querySelector(`[data-kind="${kind}"]`));
      text(`page key ${kind}`, document.querySelector(`.k-${kind}`));
    }
    text('prompt', streamRoot.querySelector('[part="prompt"]'));
    // The tree's labels on their node's fill (SVG: fill, not color).
    for (const status of ['accepted', 'rejected']) {
      const g = treeRoot.querySelector(`g[data-status="${status}"]`);
      const rect = g?.querySelector('rect:not(.source)');
      const label = g?.querySelector('text');
      if (rect && label) out[`tree ${status}`] = ratio(getComputedStyle(label).fill, getComputedStyle(rect).fill);
    }
    return out;
  });
}

for (const scheme of ['light', 'dark'] as const) {
  test(`text keeps 4.5:1 contrast in the ${scheme} scheme`, async () => {
    await page.emulateMedia({ colorScheme: scheme });
    // Show a round whose tree has a rejected node.
    const host = page.locator('spec-decoder');
    const slider = host.locator('[part="tree"] input[type="range"]');
    for (let r = Number(await slider.getAttribute('max')); r >= 0; r--) {
      await slider.fill(String(r));
      if ((await host.locator('sd-tree-view g[data-status="rejected"]').count()) > 0) break;
    }
    const ratios = await contrastInPage();
    expect(Object.keys(ratios)).toEqual(
      expect.arrayContaining(['legend accepted', 'token rejected', 'tree accepted', 'tree rejected', 'prompt']),
    );
    const low = Object.entries(ratios).filter(([, r]) => r < 4.5);
    expect(low, JSON.stringify(ratios)).toEqual([]);
  });
}

test('a phone-wide viewport (360 px, or 400% zoom) needs no sideways scrolling', async () => {
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 360, height: 800 });
  const widths = await page.evaluate(() => {
    const root = (document.querySelector('spec-decoder') as HTMLElement).shadowRoot as ShadowRoot;
    const legend = root.querySelector('[part="legend"]') as HTMLElement;
    return {
      page: document.scrollingElement?.scrollWidth ?? 0,
      legend: legend.scrollWidth - legend.clientWidth,
    };
  });
  expect(widths.page).toBeLessThanOrEqual(360);
  expect(widths.legend).toBeLessThanOrEqual(0);
});
