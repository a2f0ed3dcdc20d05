/**
 * The element at its edges, on wasm: a call while a run is in progress, attributes removed or set to values it does
 * not take, the element moved or removed mid-run, and a race cancelled during its plain decoding run. The tests share
 * one page so the models load once; they run in order.
 */
import type { Page } from '@playwright/test';
import type { GenerationResult } from '../src/engine/events';
import { expect, sharedPage, test } from './fixtures';

const PROMPT = 'It is a truth universally acknowledged, that a single man';

let page: Page;
sharedPage(async (p) => {
  page = p;
  await page.goto('./');
  await page.evaluate(async (prompt) => {
    const el = document.querySelector('spec-decoder') as HTMLElement & { updateComplete: Promise<boolean> };
    Object.assign(el, { method: 'chain', device: 'wasm', temperature: 0 });
    await el.updateComplete;
    (el.shadowRoot?.querySelector('textarea') as HTMLTextAreaElement).value = prompt;
  }, PROMPT);
});

/** In the page: the element, typed for the calls these tests make. */
type El = HTMLElement & {
  maxNewTokens: number;
  generate(): Promise<GenerationResult | null>;
  raceAgainstPlain(): Promise<unknown>;
  cancel(): void;
  updateComplete: Promise<boolean>;
};

test('a call during a run is refused and leaves that run as it is: its status, its cancel()', async () => {
  const r = await page.evaluate(async () => {
    const el = document.querySelector('spec-decoder') as El;
    el.maxNewTokens = 1000;
    const errors: string[] = [];
    el.addEventListener('sd-error', (e) => errors.push((e as CustomEvent<{ message: string }>).detail.message));
    const first = el.generate();
    await new Promise<void>((resolve) => {
      let rounds = 0;
      const on = () => {
        if (++rounds < 5) return;
        el.removeEventListener('sd-round', on);
        resolve();
      };
      el.addEventListener('sd-round', on);
    });
    const second = await el.generate();
    const race = await el.raceAgainstPlain();
    await el.updateComplete;
    const status = el.shadowRoot?.querySelector('[part="status"]')?.textContent ?? '';
    const cancelButton = el.shadowRoot?.querySelector<HTMLButtonElement>('button[part="cancel"]');
    const cancelEnabled = cancelButton ? !cancelButton.disabled : false;
    el.cancel();
    const result = await first;
    return { second, race, errors, status, cancelEnabled, stop: result?.stopReason, tokens: result?.tokens.length };
  });
  expect(r.second).toBeNull();
  expect(r.race).toBeNull();
  expect(r.errors).toEqual([
    'a run is in progress: cancel() it first, or wait for sd-done',
    'a run is in progress: cancel() it first, or wait for sd-done',
  ]);
  expect(r.status).toContain('generating');
  expect(r.cancelEnabled).toBe(true);
  expect(r.stop).toBe('cancelled');
  expect(r.tokens).toBeLessThan(1000);
});

test('a removed numeric attribute takes its default; a value an attribute does not take is refused naming it', async () => {
  const r = await page.evaluate(async () => {
    const el = document.querySelector('spec-decoder') as El;
    const errors: string[] = [];
    el.addEventListener('sd-error', (e) => errors.push((e as CustomEvent<{ message: string }>).detail.message));
    const run = async (attrs: Record<string, string | null>) => {
      for (const [name, value] of Object.entries(attrs))
        if (value === null) el.removeAttribute(name);
        else el.setAttribute(name, value);
      await el.updateComplete;
      const result = await el.generate();
      for (const name of Object.keys(attrs)) el.removeAttribute(name);
      await el.updateComplete;
      return result?.tokens.length ?? null;
    };
    el.setAttribute('max-new-tokens', '8');
    el.setAttribute('temperature', '0.5');
    el.setAttribute('top-p', '0.9');
    const defaults = await run({ 'max-new-tokens': null, temperature: null, 'top-p': null, 'top-k': null, seed: null });
    const refused = [
      await run({ temperature: 'warm' }),
      await run({ device: 'gpu' }),
      await run({ threads: 'abc' }),
      await run({ mode: 'bogus' }),
    ];
    el.setAttribute('device', 'wasm');
    return { defaults, refused, errors };
  });
  expect(r.defaults).toBe(64);
  expect(r.refused).toEqual([null, null, null, null]);
  expect(r.errors).toEqual([
    'temperature must be a number; got "warm"',
    'device must be auto, wasm or webgpu; got "gpu"',
    'threads must be "auto" or a whole number from 1 to 64; got "abc"',
    'mode must be text or chat; got "bogus"',
  ]);
});

test('moved mid-run the element keeps its run; removed mid-run the run ends as cancelled with what it made', async () => {
  const r = await page.evaluate(async () => {
    const el = document.querySelector('spec-decoder') as El;
    const parent = el.parentElement as HTMLElement;
    const errors: string[] = [];
    el.addEventListener('sd-error', (e) => errors.push((e as CustomEvent<{ message: string }>).detail.message));
    const afterRounds = (n: number) =>
      new Promise<void>((resolve) => {
        let rounds = 0;
        const on = () => {
          if (++rounds < n) return;
          el.removeEventListener('sd-round', on);
          resolve();
        };
        el.addEventListener('sd-round', on);
      });
    el.maxNewTokens = 120;
    const moving = el.generate();
    await afterRounds(3);
    parent.insertBefore(el, parent.firstChild);
    const moved = await moving;
    const removing = el.generate();
    await afterRounds(3);
    let done: GenerationResult | null = null;
    el.addEventListener(
      'sd-done',
      (e) => {
        done = (e as CustomEvent<GenerationResult>).detail;
      },
      { once: true },
    );
    el.remove();
    const removed = await removing;
    parent.appendChild(el);
    el.maxNewTokens = 4;
    const again = await el.generate();
    return {
      moved: [moved?.stopReason, moved?.tokens.length],
      removed: [removed?.stopReason, (removed?.tokens.length ?? 0) > 0],
      done: (done as GenerationResult | null)?.stopReason,
      again: again?.tokens.length,
      errors,
    };
  });
  expect(r.moved).toEqual(['max-tokens', 120]);
  expect(r.removed).toEqual(['cancelled', true]);
  expect(r.done).toBe('cancelled');
  expect(r.again).toBe(4);
  expect(r.errors).toEqual([]);
});

test('a race cancelled during its plain decoding run says so, not a count of tokens it never showed', async () => {
  const status = await page.evaluate(async () => {
    const el = document.querySelector('spec-decoder') as El;
    el.maxNewTokens = 300;
    el.addEventListener('sd-done', () => setTimeout(() => el.cancel(), 50), { once: true });
    await el.raceAgainstPlain();
    await el.updateComplete;
    return el.shadowRoot?.querySelector('[part="status"]')?.textContent ?? '';
  });
  expect(status).toContain('race cancelled (during its plain decoding run)');
});

test("a run the worker refuses before its first round leaves the last run's text in view", async () => {
  const r = await page.evaluate(async () => {
    const el = document.querySelector('spec-decoder') as El;
    const text = () => el.shadowRoot?.querySelector('sd-token-stream')?.shadowRoot?.textContent ?? '';
    el.maxNewTokens = 8;
    await el.generate();
    await el.updateComplete;
    const before = text();
    // Not a whole number: the element passes it on, and the engine in the worker refuses it.
    el.maxNewTokens = 2.5;
    const refused = await el.generate();
    await el.updateComplete;
    const error = el.shadowRoot?.querySelector('[part="error"]')?.textContent ?? '';
    el.maxNewTokens = 8;
    return { before, after: text(), refused, error };
  });
  expect(r.refused).toBeNull();
  expect(r.error).toContain('max new tokens must be a whole number >= 1; got 2.5');
  expect(r.before.length).toBeGreaterThan(20);
  expect(r.after).toBe(r.before);
});
