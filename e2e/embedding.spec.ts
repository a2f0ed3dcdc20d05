/**
 * Embedding the element under a host page's constraints: a strict Content-Security-Policy (no inline styles: the
 * stats bars and the tree's drafter colours are set from script, not in style attributes), and the library loaded
 * twice on one page (its elements are defined once, the second copy loads without an error); and what a host can
 * get wrong (onnxruntime's files elsewhere, models on another origin without CORS, a policy that blocks the worker),
 * each said in one line naming its cause.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from '@playwright/test';
import { expect, test } from './fixtures';

const CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self' blob:; style-src 'self'";

/** The page served with `CSP` as its Content-Security-Policy header. */
async function withCsp(page: Page, csp = CSP): Promise<void> {
  await page.route(
    (url) => url.pathname === '/' || url.pathname.endsWith('/index.html'),
    async (route) => {
      const response = await route.fetch();
      await route.fulfill({ response, headers: { ...response.headers(), 'content-security-policy': csp } });
    },
  );
}

/**
 * A fresh element with these properties and attributes (lookup on wasm, no draft model) loads, then generates 4
 * tokens; says "generated N", or the message it failed with. The element is removed after.
 */
function loadAndGenerate(page: Page, attributes: Record<string, string> = {}): Promise<string> {
  return page.evaluate(async (attrs) => {
    const el = document.createElement('spec-decoder') as HTMLElement & {
      load(): Promise<unknown>;
      generate(): Promise<{ tokens: number[] } | null>;
    };
    Object.assign(el, { device: 'wasm', method: 'lookup', draft: '', maxNewTokens: 4, prompt: 'It is a truth' });
    for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, value);
    document.body.append(el);
    try {
      await el.load();
      return `generated ${(await el.generate())?.tokens.length}`;
    } catch (e) {
      return (e as Error).message;
    } finally {
      el.remove();
    }
  }, attributes);
}

test('under a strict Content-Security-Policy the element generates, and its acceptance bars have height', async ({
  page,
}) => {
  await withCsp(page);
  await page.goto('./');
  const heights = await page.evaluate(async () => {
    const el = document.querySelector('spec-decoder') as HTMLElement & {
      updateComplete: Promise<boolean>;
      generate(): Promise<unknown>;
    };
    Object.assign(el, { method: 'chain', device: 'wasm', temperature: 0, maxNewTokens: 16, prompt: 'It is a truth' });
    await el.updateComplete;
    await el.generate();
    await el.updateComplete;
    const panel = el.shadowRoot?.querySelector('sd-stats-panel') as
      | (HTMLElement & { updateComplete: Promise<boolean> })
      | null;
    await panel?.updateComplete;
    return [...(panel?.shadowRoot?.querySelectorAll('.bar') ?? [])].map((b) => b.getBoundingClientRect().height);
  });
  expect(heights.length).toBeGreaterThan(0);
  expect(Math.min(...heights)).toBeGreaterThan(0);
});

test('the library loaded a second time on the page keeps the first definitions and loads without an error', async ({
  page,
}) => {
  await page.goto('./');
  const outcome = await page.evaluate(async () => {
    const src = (document.querySelector('script[type="module"][src]') as HTMLScriptElement).src;
    try {
      await import(`${src}?second-copy`);
      return 'loaded';
    } catch (e) {
      return (e as Error).message;
    }
  });
  expect(outcome).toBe('loaded');
  expect(await page.evaluate(() => customElements.get('spec-decoder') !== undefined)).toBe(true);
});

test("onnxruntime's files not where ort-base points: the load fails in one line naming the folder, and loads once pointed right", async ({
  page,
  allowProblems,
}) => {
  allowProblems(/HTTP 404: .*\/nowhere\/ort-wasm/);
  allowProblems(/HTTP 404: .*ort-wasm-simd-threaded\.asyncify\.wasm/);
  allowProblems(
    /wasm streaming compile failed|falling back to ArrayBuffer instantiation|prepare wasm: CompileError|Aborted\(CompileError/,
  );
  await page.goto('./');
  // The .wasm alone missing from the default folder (its .mjs served): refused while the flag is set.
  let wasmMissing = false;
  await page.route(/ort-wasm-simd-threaded\.asyncify\.wasm$/, (route) =>
    wasmMissing
      ? route.fulfill({ status: 404, contentType: 'text/html', body: '<!DOCTYPE html><title>Not found</title>' })
      : route.fallback(),
  );
  const folder = await loadAndGenerate(page, { 'ort-base': 'nowhere/' });
  expect(folder).toMatch(
    /^onnxruntime's files are not served at http:\/\/[^ ]+\/nowhere\/ \(http:[^ ]+\/nowhere\/ort-wasm-simd-threaded\.asyncify\.mjs could not be fetched\): serve them there, or point ort-base \(the element\) or ortBase \(the client\) at the folder that holds them$/,
  );
  wasmMissing = true;
  const wasm = await loadAndGenerate(page);
  expect(wasm).toMatch(
    /^onnxruntime's files are not served at http:[^ ]+\/ort\/ \(its \.wasm file could not be fetched, or is not wasm\)/,
  );
  wasmMissing = false;
  expect(await loadAndGenerate(page)).toBe('generated 4');
});

test('models on another origin that does not allow the page (no CORS): the load says it is down or does not allow this origin', async ({
  page,
  allowProblems,
}) => {
  allowProblems(/CORS|Failed to load resource|net::ERR_FAILED/);
  // Another origin (a port of its own) that answers, but without Access-Control-Allow-Origin: the browser gives the
  // page "Failed to fetch", as if it were down.
  const server = createServer((_, res) => res.end('{}'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await page.goto('./');
  const message = await loadAndGenerate(page, { target: `http://127.0.0.1:${port}/austen-target/` });
  server.close();
  expect(message).toMatch(
    /cannot reach http:\/\/127\.0\.0\.1:[0-9]+ \(Failed to fetch\); it is down, or it does not let this page's origin read its files \(CORS: it must answer with Access-Control-Allow-Origin\)$/,
  );
});

test('a Content-Security-Policy that blocks the engine worker: the load says so in one line naming the directive', async ({
  page,
  allowProblems,
}) => {
  allowProblems(/Content Security Policy|worker-src|Refused to/);
  await withCsp(page, CSP.replace("worker-src 'self' blob:", "worker-src 'none'"));
  await page.goto('./');
  const message = await loadAndGenerate(page);
  expect(message).toBe(
    "the page's Content-Security-Policy (worker-src) blocks the engine worker: allow its script's origin in worker-src (e.g. worker-src 'self' blob:)",
  );
});
