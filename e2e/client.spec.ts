/**
 * EngineClient from the library build, at its edges, on wasm: leaving a run's loop early stops it, a run started
 * right after a stop waits for the stopped one, load() during a run stops it with what it made, an aborted signal
 * never reaches the worker, a stream is iterated once, token ids are a prompt, bad options are refused in one
 * line, and an onProgress callback that throws does not stop a load. One page, the models loaded once; the tests run in order.
 */
import type { Page } from '@playwright/test';
import { expect, serveHostPage, sharedPage, test } from './fixtures';

const HOST = `<!doctype html><html><head><link rel="icon" href="data:,"></head><body></body></html>`;

let page: Page;
const shared = sharedPage(async (p) => {
  page = p;
  await serveHostPage(page, '**/lib/client-host.html', HOST);
  await page.goto('./lib/client-host.html');
  await page.evaluate(async () => {
    const { EngineClient } = await import(`${location.origin}/lib/spec-decoder.js`);
    const client = new EngineClient();
    await client.load({
      target: '../models/austen-target/',
      draft: '../models/austen-draft/',
      device: 'wasm',
      ortBase: `${location.origin}/lib/ort/`,
      threads: 1,
    });
    (window as unknown as { client: unknown }).client = client;
  });
});

test('leaving the loop stops the run (cancelled, with what it made); a run right after a stop waits for it', async () => {
  const r = await page.evaluate(async () => {
    // biome-ignore lint/suspicious/noExplicitAny: the client as the page sees it
    const client = (window as any).client;
    const broken = client.generate('She was', { method: 'ar', maxNewTokens: 300 });
    let rounds = 0;
    for await (const _ of broken) if (++rounds === 2) break;
    const next = client.generate('She was', { method: 'chain', maxNewTokens: 6 });
    const first = await broken.result;
    const second = await next.result;
    const stop = new AbortController();
    const aborted = client.generate('She was', { method: 'ar', maxNewTokens: 300, signal: stop.signal });
    for await (const _ of aborted) {
      stop.abort();
      break;
    }
    const right = await client.generate('She was', { method: 'ar', maxNewTokens: 4 }).result;
    return {
      first: [first.stopReason, first.tokens.length],
      second: [second.stopReason, second.tokens.length],
      aborted: (await aborted.result).stopReason,
      right: right.tokens.length,
    };
  });
  expect(r.first[0]).toBe('cancelled');
  expect(r.first[1]).toBeLessThan(300);
  expect(r.second).toEqual(['max-tokens', 6]);
  expect(r.aborted).toBe('cancelled');
  expect(r.right).toBe(4);
});

test('a generate() while one runs is refused; load() during a run stops it with what it made', async () => {
  const r = await page.evaluate(async () => {
    // biome-ignore lint/suspicious/noExplicitAny: the client as the page sees it
    const client = (window as any).client;
    const running = client.generate('She was', { method: 'ar', maxNewTokens: 300 });
    const refused = await client.generate('She was', { method: 'ar', maxNewTokens: 4 }).result.then(
      () => 'ran',
      (e: Error) => e.message,
    );
    const it = running[Symbol.asyncIterator]();
    await it.next();
    await it.next();
    const loading = client.load({
      target: '../models/austen-target/',
      draft: '../models/austen-draft/',
      device: 'wasm',
      ortBase: `${location.origin}/lib/ort/`,
      threads: 1,
    });
    const stopped = await running.result;
    await loading;
    const after = await client.generate('She was', { method: 'chain', maxNewTokens: 4 }).result;
    return { refused, stopped: [stopped.stopReason, stopped.tokens.length > 0], after: after.tokens.length };
  });
  expect(r.refused).toBe(
    'a generation is already running on this client: abort its signal or leave its loop (break) first, or wait for its result',
  );
  expect(r.stopped).toEqual(['cancelled', true]);
  expect(r.after).toBe(4);
});

test('an aborted signal never reaches the worker; a stream is iterated once; token ids are a prompt; bad options are refused', async () => {
  const r = await page.evaluate(async () => {
    // biome-ignore lint/suspicious/noExplicitAny: the client as the page sees it
    const client = (window as any).client;
    const message = (f: () => unknown) => {
      try {
        f();
        return 'accepted';
      } catch (e) {
        return (e as Error).message;
      }
    };
    const early = await client.generate('She was', { method: 'ar', maxNewTokens: 50, signal: AbortSignal.abort() })
      .result;
    const stream = client.generate('She was', { method: 'ar', maxNewTokens: 3 });
    const one = stream[Symbol.asyncIterator]();
    const second = message(() => stream[Symbol.asyncIterator]());
    while (!(await one.next()).done);
    const text = await stream.result;
    const ids = await client.generate(text.tokens, { method: 'chain', maxNewTokens: 4 }).result;
    // Refused in the worker: the error reaches `result`, and nothing is left unhandled (the page's watch says so).
    const tooLong = await client.generate('and then '.repeat(1200), { method: 'ar', maxNewTokens: 4 }).result.then(
      () => 'ran',
      (e: Error) => e.message,
    );
    return {
      early: [early.stopReason, early.tokens.length],
      second,
      ids: ids.tokens.length,
      tooLong,
      nullPrompt: message(() => client.generate(null, { method: 'ar', maxNewTokens: 2 })),
      noOptions: message(() => client.generate('x', null)),
      badSignal: message(() => client.generate('x', { method: 'ar', maxNewTokens: 2, signal: {} })),
      threads: await client.load({ target: '../models/austen-target/', device: 'wasm', threads: 'abc' }).then(
        () => 'loaded',
        (e: Error) => e.message,
      ),
      // Stop tokens reach the engine (the worker passed method, length, sampling and verify rule only).
      stops: await (async () => {
        const all = (await client.generate('She was', { method: 'chain', maxNewTokens: 8 }).result).tokens;
        const stopped = await client.generate('She was', { method: 'chain', maxNewTokens: 8, stopTokens: [all[2]] })
          .result;
        return [stopped.tokens.length <= 3, stopped.stopReason, stopped.tokens.at(-1) === all[2]];
      })(),
      // Refused in the worker before it lets go of its engine: the models loaded before still generate.
      badLoads: await (async () => {
        const seen: unknown[] = [];
        for (const bad of [{ precision: 'fp64' }, { device: 'gpu' }, { draftDevice: 'gpu' }]) {
          const refused = await client
            .load({
              target: '../models/austen-target/',
              draft: '../models/austen-draft/',
              device: 'wasm',
              ortBase: `${location.origin}/lib/ort/`,
              threads: 1,
              ...bad,
            })
            .then(
              () => 'loaded',
              (e: Error) => e.message,
            );
          const after = await client.generate('She was', { method: 'chain', maxNewTokens: 3 }).result.then(
            (r: { tokens: number[] }) => r.tokens.length,
            (e: Error) => e.message,
          );
          seen.push([refused, after]);
        }
        return seen;
      })(),
    };
  });
  expect(r.early).toEqual(['cancelled', 0]);
  expect(r.second).toBe('a generation stream can be iterated once (read `result` for the summary)');
  expect(r.ids).toBe(4);
  expect(r.tooLong).toMatch(/^context limit: the prompt has \d+ tokens; the target's context is 1024$/);
  expect(r.nullPrompt).toBe(
    'the prompt must be text, an array of token ids (an Array or an integer typed array such as Int32Array) or { messages }; got null',
  );
  expect(r.noOptions).toBe('generate() needs options: { method, maxNewTokens, … }');
  expect(r.badSignal).toBe('options.signal must be an AbortSignal');
  expect(r.threads).toBe("threads must be 'auto' or a whole number from 1 to 64; got abc");
  expect(r.stops).toEqual([true, 'eos', true]);
  expect(r.badLoads).toEqual([
    ['precision "fp64" is not one of fp32, fp16, int4, int8, auto', 3],
    ['device "gpu" is not one of auto, wasm, webgpu', 3],
    ['draftDevice "gpu" (the draft model\'s device) is not one of auto, wasm, webgpu', 3],
  ]);
});

test('an onProgress that throws is reported once, and the load goes on', async () => {
  const r = await page.evaluate(async () => {
    // biome-ignore lint/suspicious/noExplicitAny: the client as the page sees it
    const client = (window as any).client;
    let calls = 0;
    const info = await client.load({
      target: '../models/austen-target/',
      draft: '../models/austen-draft/',
      device: 'wasm',
      ortBase: `${location.origin}/lib/ort/`,
      threads: 1,
      onProgress: () => {
        calls++;
        throw new Error('the page broke');
      },
    });
    const after = await client.generate('She was', { method: 'chain', maxNewTokens: 4 }).result;
    return { calls, device: info.device, tokens: after.tokens.length };
  });
  const said = shared.problems.filter((p) => p.includes('onProgress threw: the page broke'));
  shared.problems.splice(0, shared.problems.length, ...shared.problems.filter((p) => !said.includes(p)));
  expect(r.calls).toBeGreaterThan(1);
  expect(said).toHaveLength(1);
  expect(r.device).toBe('wasm');
  expect(r.tokens).toBe(4);
});

test('a worker whose script is not served is named as such', async () => {
  await page.route('**/lib/assets/engine-worker-*.js', (route) => route.fulfill({ status: 404, body: '' }));
  const message = await page.evaluate(async () => {
    const { EngineClient } = await import(`${location.origin}/lib/spec-decoder.js`);
    return new EngineClient().load({ target: '../models/austen-target/', device: 'wasm', threads: 1 }).then(
      () => 'loaded',
      (e: Error) => e.message,
    );
  });
  await page.unroute('**/lib/assets/engine-worker-*.js');
  // The 404 is this test's own doing.
  shared.problems.splice(
    0,
    shared.problems.length,
    ...shared.problems.filter((p) => !/HTTP 404: .*engine-worker/.test(p)),
  );
  expect(message).toBe(
    "the engine worker failed to start or crashed without a message: check that its script (the library's engine-worker file) is served, then load the models again",
  );
});

test('a client loads again after a load on WebGPU (a fresh worker: onnxruntime destroys its device on release)', async () => {
  test.setTimeout(300_000);
  const r = await page.evaluate(async () => {
    const { EngineClient } = await import(`${location.origin}/lib/spec-decoder.js`);
    const client = new EngineClient();
    const options = { target: '../models/austen-target/', device: 'webgpu', ortBase: `${location.origin}/lib/ort/` };
    const run = () =>
      client.generate('She was', { method: 'ar', maxNewTokens: 2 }).result.then(
        (x: { tokens: number[] }) => x.tokens.length,
        (e: Error) => e.message,
      );
    const load = () =>
      client.load(options).then(
        (i: { device: string }) => i.device,
        (e: Error) => e.message,
      );
    const seen = [await load(), await run(), await load(), await run()];
    client.terminate();
    return seen;
  });
  // Before: the second load failed with "the GPU device was lost (Device was destroyed.)".
  expect(r).toEqual(['webgpu', 2, 'webgpu', 2]);
});
