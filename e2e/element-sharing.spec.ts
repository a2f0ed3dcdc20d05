/**
 * Elements that load the same models with the same options share one engine (one worker, one copy of the models), on
 * wasm: their runs take turns on it (a run asked for while another element's runs waits, says so, and can be
 * cancelled while it waits), a removed element lets go of it without stopping the others, and elements with other
 * options, or with `own-engine`, get workers of their own. Engine workers are counted where the page makes them.
 */
import type { Page } from '@playwright/test';
import type { GenerationResult } from '../src/engine/events';
import { expect, test } from './fixtures';

/** In the page: the element, typed for the calls these tests make. */
type El = HTMLElement & {
  maxNewTokens: number;
  method: string;
  generate(): Promise<GenerationResult | null>;
  raceAgainstPlain(): Promise<{ speculative: number; plain: number } | null>;
  load(): Promise<unknown>;
  cancel(): void;
  updateComplete: Promise<boolean>;
};
type Made = { el: El; log: [string, unknown][] };
type Page$ = {
  engines: { made: number; ended: number };
  newElement: (props?: Record<string, unknown>, attrs?: Record<string, string>) => Made;
  statusOf: (el: El) => Promise<string>;
};

/** Counts the engine workers the page makes and terminates, and defines `newElement()` (wasm, lookup, target only). */
async function open(page: Page): Promise<void> {
  await page.addInitScript(() => {
    const engines = { made: 0, ended: 0 };
    const Native = window.Worker;
    window.Worker = class extends Native {
      private engine = false;
      constructor(url: string | URL, options?: WorkerOptions) {
        super(url, options);
        if (options?.name === 'spec-decoder-engine') {
          engines.made++;
          this.engine = true;
        }
      }
      override terminate(): void {
        if (this.engine) engines.ended++;
        this.engine = false;
        super.terminate();
      }
    };
    (window as unknown as Page$).engines = engines;
  });
  await page.goto('./');
  await page.evaluate(() => {
    const w = window as unknown as Page$;
    w.newElement = (props = {}, attrs = {}) => {
      const el = document.createElement('spec-decoder') as El;
      Object.assign(el, {
        device: 'wasm',
        method: 'lookup',
        draft: '',
        maxNewTokens: 8,
        prompt: 'It is a truth universally acknowledged',
        ...props,
      });
      for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, value);
      const log: [string, unknown][] = [];
      for (const n of ['sd-loaded', 'sd-done', 'sd-error'])
        el.addEventListener(n, (e) => log.push([n, (e as CustomEvent).detail]));
      document.body.append(el);
      return { el, log };
    };
    w.statusOf = async (el) => {
      await el.updateComplete;
      return el.shadowRoot?.querySelector('[part="status"]')?.textContent?.trim() ?? '';
    };
  });
}

test('two elements with the same models share one worker; runs started together both complete, one after the other', async ({
  page,
}) => {
  await open(page);
  const r = await page.evaluate(async () => {
    const w = window as unknown as Page$;
    const a = w.newElement();
    const b = w.newElement();
    // Started together: one load for both, then B's run waits for A's and says so.
    const runA = a.el.generate();
    const runB = b.el.generate();
    let waiting = '';
    const watch = setInterval(async () => {
      const s = await w.statusOf(b.el);
      if (s.startsWith('waiting')) waiting = s;
    }, 5);
    const [ra, rb] = await Promise.all([runA, runB]);
    clearInterval(watch);
    const loaded = [a, b].map((m) => m.log.filter(([n]) => n === 'sd-loaded').length);
    const errors = [a, b].flatMap((m) => m.log.filter(([n]) => n === 'sd-error').map(([, d]) => d));
    // Both again, started at once, the other way round: B's turn first.
    const again = await Promise.all([b.el.generate(), a.el.generate()]);
    return {
      results: [ra, rb, ...again].map((x) => x && [x.stopReason, x.tokens.length, x.text]),
      loaded,
      errors,
      waiting,
      engines: { ...w.engines },
    };
  });
  expect(r.errors).toEqual([]);
  expect(r.loaded).toEqual([1, 1]);
  expect(r.engines).toEqual({ made: 1, ended: 0 });
  for (const x of r.results) expect(x?.slice(0, 2)).toEqual(['max-tokens', 8]);
  // Greedy on the same prompt: the same text from the one engine.
  expect(new Set(r.results.map((x) => x?.[2])).size).toBe(1);
  expect(r.waiting).toBe("waiting for another element's run on the shared engine");
  expect(page.workers().filter((wk) => wk.url().includes('engine-worker')).length).toBe(1);
});

test("a run cancelled while it waits ends as cancelled with nothing made, and the other element's run goes on", async ({
  page,
}) => {
  await open(page);
  const r = await page.evaluate(async () => {
    const w = window as unknown as Page$;
    const a = w.newElement({ maxNewTokens: 200 });
    const b = w.newElement();
    await Promise.all([a.el.load(), b.el.load()]);
    const runA = a.el.generate();
    await new Promise<void>((resolve) => a.el.addEventListener('sd-round', () => resolve(), { once: true }));
    const runB = b.el.generate();
    let waiting = await w.statusOf(b.el);
    for (let i = 0; i < 100 && !waiting.startsWith('waiting'); i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      waiting = await w.statusOf(b.el);
    }
    b.el.cancel();
    const rb = await runB;
    const statusB = await w.statusOf(b.el);
    const ra = await runA;
    return {
      waiting,
      rb: rb && [rb.stopReason, rb.tokens.length],
      doneB: b.log.filter(([n]) => n === 'sd-done').length,
      statusB,
      ra: ra && [ra.stopReason, ra.tokens.length],
      engines: { ...w.engines },
    };
  });
  expect(r.waiting).toBe("waiting for another element's run on the shared engine");
  expect(r.rb).toEqual(['cancelled', 0]);
  expect(r.doneB).toBe(1);
  expect(r.statusB).toBe('cancelled after 0 tokens');
  expect(r.ra).toEqual(['max-tokens', 200]);
  expect(r.engines).toEqual({ made: 1, ended: 0 });
});

test('a removed element cancels its own run only and lets go; the worker goes with the last element', async ({
  page,
}) => {
  await open(page);
  const r = await page.evaluate(async () => {
    const w = window as unknown as Page$;
    const a = w.newElement({ maxNewTokens: 200 });
    const b = w.newElement({ maxNewTokens: 200 });
    // Removed while the shared load is under way: A's run ends as cancelled; B's load goes on.
    const early = w.newElement();
    const earlyRun = early.el.generate();
    const loadB = b.el.load();
    await new Promise((resolve) => setTimeout(resolve, 100));
    early.el.remove();
    const earlyResult = await earlyRun;
    await loadB;
    // A runs, B waits its turn; A removed mid-run: A's run ends cancelled with what it made, B's runs to its end.
    const runA = a.el.generate();
    await new Promise<void>((resolve) => a.el.addEventListener('sd-round', () => resolve(), { once: true }));
    const runB = b.el.generate();
    a.el.remove();
    const [ra, rb] = await Promise.all([runA, runB]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const afterA = { ...w.engines };
    b.el.maxNewTokens = 8;
    const again = await b.el.generate();
    b.el.remove();
    await new Promise((resolve) => setTimeout(resolve, 50));
    return {
      early: earlyResult && [earlyResult.stopReason, earlyResult.tokens.length],
      earlyEvents: early.log.map(([n]) => n),
      ra: ra && [ra.stopReason, ra.tokens.length > 0 && ra.tokens.length < 200],
      rb: rb && [rb.stopReason, rb.tokens.length],
      again: again && [again.stopReason, again.tokens.length],
      errors: [a, b].flatMap((m) => m.log.filter(([n]) => n === 'sd-error').map(([, d]) => d)),
      afterA,
      afterB: { ...w.engines },
    };
  });
  expect(r.early).toEqual(['cancelled', 0]);
  expect(r.earlyEvents).toEqual(['sd-done']);
  expect(r.ra).toEqual(['cancelled', true]);
  expect(r.rb).toEqual(['max-tokens', 200]);
  expect(r.again).toEqual(['max-tokens', 8]);
  expect(r.errors).toEqual([]);
  expect(r.afterA).toEqual({ made: 1, ended: 0 });
  expect(r.afterB).toEqual({ made: 1, ended: 1 });
});

test('a race on a shared engine takes turns with the other element and still times its runs', async ({ page }) => {
  await open(page);
  const r = await page.evaluate(async () => {
    const w = window as unknown as Page$;
    const a = w.newElement({ maxNewTokens: 12 });
    const b = w.newElement({ maxNewTokens: 12 });
    const [race, run] = await Promise.all([a.el.raceAgainstPlain(), b.el.generate()]);
    return {
      race,
      run: run && [run.stopReason, run.tokens.length],
      errors: [a, b].flatMap((m) => m.log.filter(([n]) => n === 'sd-error').map(([, d]) => d)),
      engines: { ...w.engines },
    };
  });
  expect(r.errors).toEqual([]);
  expect(r.race?.speculative).toBeGreaterThan(0);
  expect(r.race?.plain).toBeGreaterThan(0);
  expect(r.run).toEqual(['max-tokens', 12]);
  expect(r.engines).toEqual({ made: 1, ended: 0 });
});

test('other options, or own-engine, get a worker of their own; an element switching away lets go of the shared one', async ({
  page,
}) => {
  await open(page);
  const r = await page.evaluate(async () => {
    const w = window as unknown as Page$;
    const a = w.newElement();
    const b = w.newElement();
    const own = w.newElement({}, { 'own-engine': '' });
    const other = w.newElement({ precision: 'fp32' });
    const results = await Promise.all([a, b, own, other].map((m) => m.el.generate()));
    const shared = { ...w.engines };
    // B switches to other options: it leaves A's engine (still A's) for one of its own.
    b.el.setAttribute('precision', 'int8');
    const switched = await b.el.generate();
    const afterSwitch = { ...w.engines };
    // And back: it joins A's engine again, loaded; nothing new is made.
    b.el.removeAttribute('precision');
    const back = await b.el.generate();
    await new Promise((resolve) => setTimeout(resolve, 50));
    return {
      results: results.map((x) => x && [x.stopReason, x.tokens.length]),
      switched: switched?.tokens.length,
      back: back?.tokens.length,
      shared,
      afterSwitch,
      afterBack: { ...w.engines },
      errors: [a, b, own, other].flatMap((m) => m.log.filter(([n]) => n === 'sd-error').map(([, d]) => d)),
    };
  });
  expect(r.errors).toEqual([]);
  expect(r.results).toEqual(Array.from({ length: 4 }, () => ['max-tokens', 8]));
  expect(r.shared).toEqual({ made: 3, ended: 0 }); // a and b; own; other
  expect(r.switched).toBe(8);
  expect(r.afterSwitch).toEqual({ made: 4, ended: 0 });
  expect(r.back).toBe(8);
  expect(r.afterBack).toEqual({ made: 4, ended: 1 }); // b's int8 engine, which no one else held
});
