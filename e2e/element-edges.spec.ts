/**
 * The element at its edges, on wasm: a call while a run is in progress, attributes removed or set to values it does
 * not take, the element moved or removed mid-run, a race cancelled during one of its unseen runs, the runs a race
 * times, a mode changed mid-run, the chat box's focus, what a method switch reloads, an element removed or changed while
 * it loads, and forced colours. The tests share one page so the models load once; they run in order.
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
      await run({ 'heads-device': 'gpu' }),
      await run({ verify: 'bogus' }),
      await run({ precision: 'fp64' }),
    ];
    el.setAttribute('device', 'wasm');
    return { defaults, refused, errors };
  });
  expect(r.defaults).toBe(64);
  expect(r.refused).toEqual([null, null, null, null, null, null, null]);
  expect(r.errors).toEqual([
    'temperature must be a number; got "warm"',
    'device must be auto, wasm or webgpu; got "gpu"',
    'threads must be "auto" or a whole number from 1 to 64; got "abc"',
    'mode must be text or chat; got "bogus"',
    'heads-device must be auto, wasm or webgpu; got "gpu"',
    'verify must be rejection or typical; got "bogus"',
    'precision must be one of fp32, fp16, int4, int8, auto; got "fp64"',
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

test('a race cancelled during an unseen run names that run, not a count of tokens it never showed', async () => {
  const statuses = await page.evaluate(async () => {
    const el = document.querySelector('spec-decoder') as El;
    el.maxNewTokens = 300;
    await el.generate(); // loaded, with its client
    const client = (el as unknown as { client: { generate: (prompt: unknown, o: { method: string }) => unknown } })
      .client;
    const generate = client.generate.bind(client);
    const out: string[] = [];
    // Cancel the race in its nth run: 1 is the shown run, 2 the unseen plain run, 3 the unseen timed chain run.
    for (const nth of [2, 3]) {
      let calls = 0;
      client.generate = (prompt, o) => {
        calls++;
        if (calls === nth) setTimeout(() => el.cancel(), 50);
        return generate(prompt, o);
      };
      await el.raceAgainstPlain();
      await el.updateComplete;
      out.push(el.shadowRoot?.querySelector('[part="status"]')?.textContent ?? '');
    }
    client.generate = generate;
    return out;
  });
  expect(statuses[0]).toContain('race cancelled (during its unseen plain decoding run)');
  expect(statuses[1]).toContain('race cancelled (during its unseen chain run)');
});

test('a race times its runs the same way: after the shown one, none drawn, plain decoding before and after', async () => {
  const r = await page.evaluate(async () => {
    const el = document.querySelector('spec-decoder') as El;
    el.maxNewTokens = 12;
    await el.generate(); // loaded, with its client
    // The element's client (a private field): the runs a race asks it for.
    const client = (el as unknown as { client: { generate: (prompt: unknown, o: { method: string }) => unknown } })
      .client;
    const methods: string[] = [];
    const generate = client.generate.bind(client);
    client.generate = (prompt, o) => {
      methods.push(o.method);
      return generate(prompt, o);
    };
    let rounds = 0;
    const count = () => rounds++;
    el.addEventListener('sd-round', count);
    const race = (await el.raceAgainstPlain()) as { speculative: number; plain: number } | null;
    el.removeEventListener('sd-round', count);
    client.generate = generate;
    return { methods, rounds, race };
  });
  // The shown run, plain decoding, then the timed run and plain decoding again: once, or up to three times while the
  // plain runs around the timed one differ by more than 15% (a browser still compiling after the load).
  const pairs = (r.methods.length - 2) / 2;
  expect(r.methods).toEqual(['chain', 'ar', ...Array.from({ length: pairs }, () => ['chain', 'ar']).flat()]);
  expect(pairs).toBeGreaterThanOrEqual(1);
  expect(pairs).toBeLessThanOrEqual(3);
  expect(r.rounds).toBeGreaterThan(0); // the shown run's rounds only
  expect(r.rounds).toBeLessThanOrEqual(12);
  expect(r.race?.speculative).toBeGreaterThan(0);
  expect(r.race?.plain).toBeGreaterThan(0);
});

test('a mode changed during a run takes effect when it ends; a chat message sent gets the focus back after the reply', async () => {
  const r = await page.evaluate(async () => {
    const el = document.querySelector('spec-decoder') as El;
    const shown = () => ({
      stream: !!el.shadowRoot?.querySelector('[part="stream"]'),
      chat: !!el.shadowRoot?.querySelector('[part="chat"]'),
    });
    el.maxNewTokens = 300;
    const firstRound = new Promise<void>((resolve) => el.addEventListener('sd-round', () => resolve(), { once: true }));
    const run = el.generate();
    await firstRound;
    el.setAttribute('mode', 'chat');
    await el.updateComplete;
    const during = shown();
    el.cancel();
    await run;
    await el.updateComplete;
    const after = shown();
    // A message sent from the chat box: the reply fails (the bundled target has no chat template), and the focus
    // comes back to the box.
    const chat = el.shadowRoot?.querySelector('[part="chat"]') as HTMLElement & { updateComplete: Promise<boolean> };
    const box = chat.shadowRoot?.querySelector('textarea') as HTMLTextAreaElement;
    box.focus();
    box.value = 'Hello';
    const replied = new Promise<string>((resolve) =>
      el.addEventListener('sd-error', (e) => resolve((e as CustomEvent<{ message: string }>).detail.message), {
        once: true,
      }),
    );
    box.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
    const error = await replied;
    await el.updateComplete;
    await chat.updateComplete;
    const focused = chat.shadowRoot?.activeElement === box;
    el.removeAttribute('mode');
    await el.updateComplete;
    return { during, after, error, focused };
  });
  expect(r.during).toEqual({ stream: true, chat: false });
  expect(r.after).toEqual({ stream: false, chat: true });
  expect(r.error).toMatch(/no chat template/);
  expect(r.focused).toBe(true);
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

test('the bundled target however written (./, no trailing slash) gets its own heads; another target must name them', async () => {
  const r = await page.evaluate(async () => {
    const el = document.querySelector('spec-decoder') as El & { target: string; method: string };
    const errors: string[] = [];
    el.addEventListener('sd-error', (e) => errors.push((e as CustomEvent<{ message: string }>).detail.message));
    const before = { target: el.target, method: el.method, max: el.maxNewTokens };
    Object.assign(el, { method: 'eagle', maxNewTokens: 4 });
    el.target = 'elsewhere/';
    const other = await el.generate();
    el.target = './models/austen-target';
    const bundled = await el.generate();
    Object.assign(el, { target: before.target, method: before.method, maxNewTokens: before.max });
    return { other, tokens: bundled?.tokens.length, errors };
  });
  expect(r.other).toBeNull();
  expect(r.errors).toEqual([
    'method "eagle" needs an EAGLE-3 head and the target\'s hidden states: set the heads attribute to heads trained on elsewhere/',
  ]);
  expect(r.tokens).toBe(4);
});

test('switching methods reloads only for what a method adds (heads, layer switches), never for one that needs less', async () => {
  const loads = await page.evaluate(async () => {
    const el = document.querySelector('spec-decoder') as El & { method: string };
    const before = { method: el.method, max: el.maxNewTokens };
    el.maxNewTokens = 4;
    await el.generate(); // loaded for the shared page's method
    const out: string[] = [];
    const onLoaded = () => out.push(el.method);
    el.addEventListener('sd-loaded', onLoaded);
    for (const method of ['ar', 'auto', 'chain', 'swift', 'ar', 'chain', 'eagle', 'ar', 'auto']) {
      el.method = method;
      await el.generate();
    }
    el.removeEventListener('sd-loaded', onLoaded);
    Object.assign(el, { method: before.method, maxNewTokens: before.max });
    return out;
  });
  // swift's target has layer switches and eagle's has its heads; the engine with either runs the rest as it is.
  expect(loads).toEqual(['swift', 'eagle']);
});

/** In the page: `newElement()` makes an element of its own (wasm, lookup, no draft model) and logs its events. */
const defineNewElement = () =>
  page.evaluate(() => {
    (window as unknown as { newElement: () => unknown }).newElement = () => {
      const el = document.createElement('spec-decoder');
      Object.assign(el, { device: 'wasm', method: 'lookup', draft: '', maxNewTokens: 8, prompt: 'It is a truth' });
      const log: [string, unknown][] = [];
      for (const n of ['sd-loaded', 'sd-done', 'sd-error'])
        el.addEventListener(n, (e) => log.push([n, (e as CustomEvent).detail]));
      document.body.append(el);
      return { el, log };
    };
  });
type NewElement = () => { el: El & { load(): Promise<unknown> }; log: [string, unknown][] };

test('removed while loading, a run ends as cancelled (sd-done) with nothing made: no error, no sd-loaded after', async () => {
  await defineNewElement();
  const r = await page.evaluate(async () => {
    const { el, log } = (window as unknown as { newElement: NewElement }).newElement();
    const run = el.generate();
    await new Promise((resolve) => setTimeout(resolve, 200)); // still loading
    el.remove();
    const result = await run;
    await new Promise((resolve) => setTimeout(resolve, 500));
    return { result: result && [result.stopReason, result.tokens.length], events: log.map(([n]) => n) };
  });
  expect(r.result).toEqual(['cancelled', 0]);
  expect(r.events).toEqual(['sd-done']);
});

test('attributes changed while loading are loaded for the next run; a load under way is shared, not repeated', async () => {
  await defineNewElement();
  const r = await page.evaluate(async () => {
    const { el, log } = (window as unknown as { newElement: NewElement }).newElement();
    // A preload, then Generate before it is done: one load.
    const preload = el.load();
    await el.generate();
    await preload;
    const shared = log.filter(([n]) => n === 'sd-loaded').length;
    // Switched to swift while the next load runs: the run after it has the layer switches swift needs.
    el.setAttribute('precision', 'fp32');
    const first = el.generate();
    await new Promise((resolve) => setTimeout(resolve, 100));
    el.setAttribute('method', 'swift');
    await first;
    const swift = await el.generate();
    el.remove();
    const errors = log.filter(([n]) => n === 'sd-error').map(([, d]) => (d as { message: string }).message);
    return { shared, swift: swift?.tokens.length, errors };
  });
  expect(r.shared).toBe(1);
  expect(r.errors).toEqual([]);
  expect(r.swift).toBe(8);
});

test('a load replaced by a load of other options, or stopped by a removal, tells its caller which; the later load goes on', async () => {
  await defineNewElement();
  const r = await page.evaluate(async () => {
    const { el, log } = (window as unknown as { newElement: NewElement }).newElement();
    const outcome = (p: Promise<unknown>) =>
      p.then(
        () => 'loaded',
        (e: Error) => e.message,
      );
    const first = outcome(el.load());
    await new Promise((resolve) => setTimeout(resolve, 100)); // still loading
    el.setAttribute('precision', 'fp32');
    const second = outcome(el.load());
    const replaced = [await first, await second];
    el.setAttribute('precision', 'int8');
    const third = outcome(el.load());
    await new Promise((resolve) => setTimeout(resolve, 100));
    el.remove();
    const removed = await third;
    const errors = log.filter(([n]) => n === 'sd-error').length;
    return { replaced, removed, errors };
  });
  expect(r.replaced).toEqual([
    'load superseded: the models or options changed before it finished, and a later load replaced it',
    'loaded',
  ]);
  expect(r.removed).toBe('load stopped: the element was removed before its models finished loading');
  expect(r.errors).toBe(0);
});

test('forced colours (dark): the accepted path reads HighlightText on Highlight, and the acceptance bars show', async () => {
  await page.emulateMedia({ forcedColors: 'active', colorScheme: 'dark' });
  try {
    const r = await page.evaluate(async () => {
      const el = document.querySelector('spec-decoder') as El;
      el.maxNewTokens = 24;
      await el.generate();
      await el.updateComplete;
      const root = el.shadowRoot as ShadowRoot;
      const tree = root.querySelector('sd-tree-view')?.shadowRoot;
      const stats = root.querySelector('sd-stats-panel')?.shadowRoot;
      const system = (name: string) => {
        const probe = document.createElement('span');
        probe.style.color = name;
        document.body.append(probe);
        const c = getComputedStyle(probe).color;
        probe.remove();
        return c;
      };
      const rect = tree?.querySelector('g.accepted rect');
      const label = tree?.querySelector('g.accepted text');
      const bar = stats?.querySelector('.bar');
      return {
        highlight: system('Highlight'),
        highlightText: system('HighlightText'),
        rect: rect && getComputedStyle(rect).fill,
        label: label && getComputedStyle(label).fill,
        bar: bar && getComputedStyle(bar).backgroundColor,
        page: getComputedStyle(document.body).backgroundColor,
      };
    });
    expect(r.rect).toBe(r.highlight);
    expect(r.label).toBe(r.highlightText);
    expect(r.bar).toBe(r.highlight);
    expect(r.bar).not.toBe(r.page);
  } finally {
    await page.emulateMedia({ forcedColors: 'none', colorScheme: null });
  }
});

test('a prompt set as a property runs at once; the chat view shows rounds as the element does and keeps a reply that failed part-way', async () => {
  const r = await page.evaluate(async (original) => {
    const el = document.querySelector('spec-decoder') as El & { prompt: string; hideRejected: boolean };
    el.maxNewTokens = 6;
    await el.updateComplete;
    // Set and run in one task: the box still shows the text before (it re-renders a microtask later).
    el.prompt = 'Mr. Darcy said';
    const now = await el.generate();
    await el.updateComplete;
    const later = await el.generate();
    const box = el.shadowRoot?.querySelector('textarea') as HTMLTextAreaElement;
    const shown = box.value;
    // Typing in the box sets the property too.
    box.value = original;
    box.dispatchEvent(new Event('input'));
    const typed = el.prompt;

    // The chat view on its own: rounds shown as the element's own stream shows them, and a failure part-way.
    type Chat = HTMLElement & {
      hideRejected: boolean;
      groupRounds: boolean;
      updateComplete: Promise<boolean>;
      send(text: string): void;
      addRound(e: unknown): void;
      failReply(): void;
      readonly messages: { role: string; content: string }[];
    };
    const chat = document.createElement('sd-chat') as Chat;
    document.body.append(chat);
    Object.assign(chat, { hideRejected: true, groupRounds: true });
    const piece = (id: number, text: string) => ({ id, text });
    const round = (n: number) => ({
      round: n,
      accepted: [piece(10 + n, 'Yes')],
      rejected: [piece(20 + n, ' no')],
      target: [piece(30 + n, ',')],
      targetKind: 'correction',
      tree: { tokens: [], texts: [], parents: [], status: [] },
      counts: { targetCalls: n + 1, draftCalls: 0, tokens: 2, targetBytes: 0 },
      timings: { draftMs: 0, verifyMs: 0, overheadMs: 0, totalMs: 0 },
    });
    chat.send('Is it?');
    chat.addRound(round(0));
    chat.addRound(round(1));
    chat.failReply();
    await chat.updateComplete;
    const stream = chat.shadowRoot?.querySelector('sd-token-stream') as Chat | null;
    await stream?.updateComplete;
    const kinds = [...(stream?.shadowRoot?.querySelectorAll('[data-kind]') ?? [])].map((t) =>
      t.getAttribute('data-kind'),
    );
    const rounds = stream?.shadowRoot?.querySelectorAll('[part="round"]').length ?? 0;
    const kept = chat.messages;
    // A failure before the first token: the question goes back to the box.
    chat.send('And then?');
    chat.failReply();
    await chat.updateComplete;
    const after = chat.messages.length;
    const input = chat.shadowRoot?.querySelector('textarea')?.value;
    chat.remove();
    el.prompt = original;
    await el.updateComplete;
    return {
      same: now !== null && later !== null && JSON.stringify(now.tokens) === JSON.stringify(later.tokens),
      shown,
      typed: typed === original,
      kinds,
      rounds,
      kept,
      after,
      input,
    };
  }, PROMPT);
  expect(r.same).toBe(true);
  expect(r.shown).toBe('Mr. Darcy said');
  expect(r.typed).toBe(true);
  expect(r.kinds).toEqual(['accepted', 'target', 'accepted', 'target']);
  expect(r.rounds).toBe(2);
  expect(r.kept).toEqual([
    { role: 'user', content: 'Is it?' },
    { role: 'assistant', content: 'Yes,Yes,' },
  ]);
  expect(r.after).toBe(2);
  expect(r.input).toBe('And then?');
});
