/**
 * The element on the demo page, on wasm (fast): what a finished run shows (rejected drafts, the tree, the numbers,
 * the drafter's note), status and focus around a run and a cancel, theming from the page, the prefixed events, the
 * page's draft-model choice, and the default device on a software WebGPU adapter. The tests share one page so the
 * models load once; they run in order.
 */
import type { Page } from '@playwright/test';
import type { GenerationResult, RoundEvent } from '../src/engine/events';
import { expect, sharedPage, test } from './fixtures';

const PROMPT = 'It is a truth universally acknowledged, that a single man';

let page: Page;
sharedPage(async (p) => {
  page = p;
  await page.goto('./');
});

interface Run {
  rounds: RoundEvent[];
  result: GenerationResult | null;
}

/** Set the element's properties and the prompt, generate, and return the rounds and the result. */
function generate(props: Record<string, unknown>, prompt = PROMPT): Promise<Run> {
  return page.evaluate(
    async ({ props, prompt }) => {
      const el = document.querySelector('spec-decoder') as HTMLElement & {
        generate(): Promise<GenerationResult | null>;
        updateComplete: Promise<boolean>;
      };
      Object.assign(el, props);
      await el.updateComplete;
      (el.shadowRoot?.querySelector('textarea') as HTMLTextAreaElement).value = prompt;
      const rounds: RoundEvent[] = [];
      const onRound = (e: Event) => rounds.push((e as CustomEvent<RoundEvent>).detail);
      el.addEventListener('sd-round', onRound);
      const result = await el.generate();
      el.removeEventListener('sd-round', onRound);
      await el.updateComplete;
      return { rounds, result };
    },
    { props, prompt },
  );
}

const host = () => page.locator('spec-decoder');

test('on a software WebGPU adapter the default device is wasm, with a notice saying why', async () => {
  test.setTimeout(120_000);
  expect(await host().evaluate((e) => (e as HTMLElement & { device: string }).device)).toBe('auto');
  const run = await generate({ method: 'chain', maxNewTokens: 4 });
  expect(run.result?.tokens.length).toBe(4);
  await expect(host().locator('[part="legend"]')).toContainText('on wasm');
  await expect(host().locator('[part="fallback"]')).toContainText('software WebGPU adapter');
  await expect(host().locator('[part="fallback"]')).toContainText('device="webgpu"');
});

test('events are prefixed and carry typed details; the old names still fire', async () => {
  const seen = await page.evaluate(async () => {
    const el = document.querySelector('spec-decoder') as HTMLElement & {
      method: string;
      maxNewTokens: number;
      generate(): Promise<GenerationResult | null>;
    };
    const count: Record<string, number> = {};
    const details: Record<string, unknown> = {};
    for (const name of ['sd-round', 'sd-done', 'sd-error', 'sd-loaded', 'round', 'done', 'error', 'loaded']) {
      el.addEventListener(name, (e) => {
        count[name] = (count[name] ?? 0) + 1;
        details[name] = (e as CustomEvent).detail;
      });
    }
    el.method = 'chain';
    el.maxNewTokens = 6;
    (el.shadowRoot?.querySelector('textarea') as HTMLTextAreaElement).value = 'She was';
    const result = await el.generate();
    el.method = 'no-such-method';
    await el.generate();
    el.method = 'chain';
    return { count, details, tokens: result?.tokens };
  });
  expect(seen.count['sd-round']).toBeGreaterThan(0);
  expect(seen.count.round).toBe(seen.count['sd-round']);
  expect(seen.count['sd-done']).toBe(1);
  expect(seen.count.done).toBe(1);
  expect((seen.details['sd-done'] as GenerationResult).tokens).toEqual(seen.tokens);
  expect((seen.details['sd-round'] as RoundEvent).counts.tokens).toBe(6);
  expect(seen.count['sd-error']).toBe(1);
  expect(seen.count.error).toBe(1);
  expect((seen.details['sd-error'] as { message: string }).message).toContain('unknown method "no-such-method"');
});

test('rejected drafts stay in the stream, struck through, after the run; a toggle hides them', async () => {
  const run = await generate({ method: 'chain', maxNewTokens: 32 });
  const rejected = run.rounds.flatMap((r) => r.rejected.map((p) => p.text));
  // The point: more than the last round's rejections are still visible.
  expect(run.rounds.filter((r) => r.rejected.length > 0).length).toBeGreaterThanOrEqual(2);
  const shown = host().locator('sd-token-stream [data-kind="rejected"]');
  expect(await shown.allTextContents()).toEqual(rejected);
  expect(await shown.first().evaluate((t) => getComputedStyle(t).textDecorationLine)).toContain('line-through');
  await host().locator('[part="show-rejected"]').uncheck();
  await expect(shown).toHaveCount(0);
  await host().locator('[part="show-rejected"]').check();
  await expect(shown).toHaveCount(rejected.length);
});

test('the stream holds the prompt and the tokens, with no stray blank line or indent', async () => {
  const run = await generate({ method: 'chain', maxNewTokens: 12 });
  await host().locator('[part="show-rejected"]').uncheck();
  const text = await host()
    .locator('sd-token-stream [part="stream"]')
    .evaluate((s) => s.textContent);
  expect(text).toBe(PROMPT + run.result?.text);
  await host().locator('[part="show-rejected"]').check();
});

test('the tree opens on the most informative round, with a key; acceptance bars show their numbers', async () => {
  // 40 tokens: with the self-distilled draft, in 32 the most informative round was the last one.
  const run = await generate({ method: 'dynamic', maxNewTokens: 40 });
  let best = 0;
  run.rounds.forEach((r, i) => {
    const b = run.rounds[best] as RoundEvent;
    if (
      r.accepted.length > b.accepted.length ||
      (r.accepted.length === b.accepted.length && r.tree.tokens.length > b.tree.tokens.length)
    )
      best = i;
  });
  expect(best).not.toBe(run.rounds.length - 1); // otherwise this run cannot tell the difference
  const slider = host().locator('[part="tree"] input[type="range"]');
  await expect(slider).toHaveValue(String(best));
  const nodes = host().locator('sd-tree-view g[data-status]');
  await expect(nodes).toHaveCount((run.rounds[best] as RoundEvent).tree.tokens.length);
  const key = host().locator('sd-tree-view [part="key"]');
  for (const entry of ['accepted', 'rejected', 'unreached', '· = space', '⏎ = newline']) {
    await expect(key).toContainText(entry);
  }
  const bars = host().locator('sd-stats-panel [part="acceptance"]');
  for (const [d, a] of (run.result?.stats.acceptanceByDepth ?? []).entries()) {
    await expect(bars.locator(`[data-depth="${d + 1}"]`)).toHaveText(`${Math.round(100 * a)}%`);
  }
});

test('a wide tree scrolls inside its column: the numbers keep theirs, and nothing runs past the element', async () => {
  // On the demo page a 16-token chain (auto's, or adaptive's) took the stats' column down to its minimum (14rem), and
  // their values wrapped a word a line. Here the fixed chain's 5 nodes in an element 640 px wide do the same.
  await page.setViewportSize({ width: 1100, height: 900 });
  const run = await generate({ method: 'chain', maxNewTokens: 24 });
  const wide = run.rounds.findIndex((r) => r.tree.tokens.length >= 5);
  expect(wide).toBeGreaterThanOrEqual(0);
  await host().locator('[part="tree"] input[type="range"]').fill(String(wide));
  await host().evaluate((e) => {
    (e as HTMLElement).style.width = '640px';
  });
  const box = async (selector: string) =>
    (await host().locator(selector).boundingBox()) as { x: number; width: number };
  const element = (await host().boundingBox()) as { x: number; width: number };
  const stats = await box('sd-stats-panel');
  const tree = await box('.panels > [part="tree"]');
  expect(stats.width).toBeGreaterThanOrEqual(300);
  expect(tree.x + tree.width).toBeLessThanOrEqual(element.x + element.width + 1);
  await host().evaluate((e) => {
    (e as HTMLElement).style.width = '';
  });
});

test('while running, focus is on Cancel; Enter cancels; the status says how many tokens; focus returns to Generate', async () => {
  test.setTimeout(120_000);
  await page.evaluate(() => {
    const el = document.querySelector('spec-decoder') as HTMLElement & { method: string; maxNewTokens: number };
    el.method = 'chain';
    el.maxNewTokens = 400;
    const w = window as unknown as { rounds: number; done?: GenerationResult };
    w.rounds = 0;
    w.done = undefined;
    el.addEventListener('sd-round', () => w.rounds++);
    el.addEventListener('sd-done', (e) => {
      w.done = (e as CustomEvent<GenerationResult>).detail;
    });
  });
  const focused = () =>
    page.evaluate(() => {
      const el = document.querySelector('spec-decoder') as HTMLElement;
      return document.activeElement === el ? el.shadowRoot?.activeElement?.getAttribute('part') : 'outside';
    });
  await host().locator('button[part="generate"]').click();
  await expect.poll(() => page.evaluate(() => (window as unknown as { rounds: number }).rounds)).toBeGreaterThan(2);
  expect(await focused()).toBe('cancel');
  await page.keyboard.press('Enter');
  await expect
    .poll(() => page.evaluate(() => (window as unknown as { done?: GenerationResult }).done?.stopReason))
    .toBe('cancelled');
  const n = await page.evaluate(() => (window as unknown as { done: GenerationResult }).done.tokens.length);
  await expect(host().locator('[part="status"]')).toHaveText(`cancelled after ${n} tokens`);
  expect(await focused()).toBe('generate');
});

test('colours set on <spec-decoder> recolour the tokens, the legend and the tree', async () => {
  await page.addStyleTag({
    content: 'spec-decoder { --sd-accepted: rgb(1, 2, 3); --sd-rejected: rgb(4, 5, 6); --sd-target: rgb(7, 8, 9); }',
  });
  await generate({ method: 'chain', maxNewTokens: 24 });
  const colour = (selector: string, property = 'color') =>
    host()
      .locator(selector)
      .first()
      .evaluate((e, p) => getComputedStyle(e).getPropertyValue(p), property);
  expect(await colour('sd-token-stream [data-kind="accepted"]')).toBe('rgb(1, 2, 3)');
  expect(await colour('sd-token-stream [data-kind="rejected"]')).toBe('rgb(4, 5, 6)');
  expect(await colour('sd-token-stream [data-kind="target"]')).toBe('rgb(7, 8, 9)');
  expect(await colour('[part="legend"] [data-kind="accepted"]')).toBe('rgb(1, 2, 3)');
  expect(await colour('sd-tree-view g[data-status="accepted"] rect', 'stroke')).toBe('rgb(1, 2, 3)');
  await page.evaluate(() => {
    for (const s of document.querySelectorAll('style')) if (s.textContent?.includes('rgb(1, 2, 3)')) s.remove();
  });
});

test('merged drafting: tree nodes say which drafter proposed them, with a key; the round note is shown', async () => {
  const run = await generate({ method: 'merged', maxNewTokens: 32 }, `${PROMPT}, ${PROMPT}`);
  const slider = host().locator('[part="tree"] input[type="range"]');
  const largest = run.rounds.reduce(
    (b, r, i) => (r.tree.tokens.length > (run.rounds[b]?.tree.tokens.length ?? 0) ? i : b),
    0,
  );
  for (const i of [0, largest, run.rounds.length - 1]) {
    await slider.evaluate((s, v) => {
      (s as HTMLInputElement).value = String(v);
      s.dispatchEvent(new Event('input'));
    }, i);
    const round = run.rounds[i] as RoundEvent;
    expect(round.tree.sources?.length).toBe(round.tree.tokens.length);
    const sources = await host()
      .locator('sd-tree-view g[data-status]')
      .evaluateAll((gs) => gs.map((g) => g.getAttribute('data-source')));
    expect(sources.slice(1)).toEqual(round.tree.sources?.slice(1));
    await expect(host().locator('[part="note"]')).toHaveText(round.note?.text ?? '');
    const key = host().locator('sd-tree-view [part="source-key"] [data-source]');
    expect(new Set(await key.evaluateAll((k) => k.map((e) => e.getAttribute('data-source'))))).toEqual(
      new Set(round.tree.sources?.slice(1)),
    );
  }
  const used = new Set(run.rounds.flatMap((r) => r.tree.sources?.slice(1) ?? []));
  expect(used.has('lookup') || used.has('lookup+draft')).toBe(true);
  expect([...used].some((s) => s.includes('draft'))).toBe(true);
});

test("lookahead: the Jacobi window rides along greyed, apart from the tree, and the drafter's note is shown", async () => {
  const run = await generate({ method: 'lookahead', maxNewTokens: 16 });
  const i = run.rounds.findIndex((r) => (r.tree.aux?.tokens.length ?? 0) > 0);
  expect(i).toBeGreaterThanOrEqual(0);
  await host()
    .locator('[part="tree"] input[type="range"]')
    .evaluate((s, v) => {
      (s as HTMLInputElement).value = String(v);
      s.dispatchEvent(new Event('input'));
    }, i);
  const round = run.rounds[i] as RoundEvent;
  const aux = host().locator('sd-tree-view [part="aux"]');
  await expect(aux).toContainText('lookahead window');
  await expect(aux.locator('[data-aux]')).toHaveCount(round.tree.aux?.tokens.length ?? -1);
  await expect(host().locator('[part="note"]')).toHaveText(round.note?.text ?? '');
});

test('the page runs lookup and lookahead with no draft model; methods that need one are disabled', async () => {
  test.setTimeout(120_000);
  await host().evaluate((e) => {
    (e as HTMLElement & { method: string }).method = 'dynamic';
  });
  await page.locator('#settings [name="draft-model"]').selectOption('none');
  const menu = host().locator('select[part="method"]');
  await expect(menu).toHaveValue('lookup');
  for (const m of ['chain', 'tree', 'dynamic', 'merged'])
    await expect(menu.locator(`option[value="${m}"]`)).toBeDisabled();
  for (const m of ['ar', 'lookup', 'lookahead']) await expect(menu.locator(`option[value="${m}"]`)).toBeEnabled();
  const loaded = page.evaluate(
    () =>
      new Promise<unknown>((resolve) =>
        document
          .querySelector('spec-decoder')
          ?.addEventListener('sd-loaded', (e) => resolve((e as CustomEvent).detail), {
            once: true,
          }),
      ),
  );
  for (const method of ['lookup', 'lookahead']) {
    const run = await generate({ method, maxNewTokens: 8 });
    expect(run.result?.tokens.length, method).toBe(8);
  }
  expect(await loaded).not.toHaveProperty('draft');
  await page.locator('#settings [name="draft-model"]').selectOption('pair');
  await expect(menu.locator('option[value="dynamic"]')).toBeEnabled();
  expect(await host().getAttribute('draft')).toBe('models/austen-draft/');
});
