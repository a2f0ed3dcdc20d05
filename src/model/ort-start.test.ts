/**
 * onnxruntime started while the models load (ort-start.ts): once per onnxruntime, and when it cannot start, the load
 * says why in onnxruntime's first words, not in the "previous call failed" every later session gets.
 */
import * as ort from 'onnxruntime-web';
import { describe, expect, it } from 'vitest';
import { openModels } from './index';
import { ortStartAsked, ortStartMs, startOrt } from './ort-start';
import type { Ort } from './runner';

const TARGET = 'public/models/austen-target';

/** An onnxruntime whose every session fails as onnxruntime-web does once its wasm failed to start. */
function failingOrt(first: string, wasmPaths = '/ort/') {
  const asked: Uint8Array[] = [];
  const fake = {
    Tensor: ort.Tensor,
    env: { wasm: { wasmPaths } },
    InferenceSession: {
      create: async (model: Uint8Array) => {
        asked.push(model);
        throw new Error(asked.length === 1 ? first : "previous call to 'initializeWebAssembly()' failed.");
      },
    },
  };
  return { ort: fake as unknown as Ort, asked };
}

describe('onnxruntime started while the models load', () => {
  it('builds one small session once per onnxruntime, and a working one starts', async () => {
    const { ort: fake, asked } = failingOrt('boom');
    const [a, b] = [startOrt(fake), startOrt(fake)];
    expect(a).toBe(b);
    expect(await a).toBeInstanceOf(Error);
    expect(asked).toHaveLength(1);
    expect(asked[0]?.length).toBeLessThan(200);
    ort.env.wasm.numThreads = 1;
    expect(await startOrt(ort as unknown as Ort)).toBeNull();
  });

  it("reports onnxruntime's files not served, from the start's error", async () => {
    const { ort: fake, asked } = failingOrt('both async and sync fetching of the wasm failed');
    await expect(openModels(fake, { target: TARGET }, { device: 'wasm' })).rejects.toThrow(
      /^onnxruntime's files are not served at \/ort\/ \(its \.wasm file could not be fetched, or is not wasm\)/,
    );
    // The target's own session was never asked for: it would only have said "previous call … failed".
    expect(asked).toHaveLength(1);
  });

  it('times the start once it is done, and the load that started it reports the time', async () => {
    ort.env.wasm.numThreads = 1;
    // An onnxruntime object of its own (the same runtime underneath), so this test starts it whatever ran before.
    const own = { ...ort, InferenceSession: ort.InferenceSession } as unknown as Ort;
    expect(ortStartAsked(own)).toBe(false);
    const opened = await openModels(own, { target: TARGET }, { device: 'wasm' });
    expect(ortStartAsked(own)).toBe(true);
    expect(opened.startMs).toBe(ortStartMs(own));
    expect(opened.startMs).toBeGreaterThan(0);
    await opened.target.release();
    // A second load in the process finds it started: no start of its own to report.
    const again = await openModels(own, { target: TARGET }, { device: 'wasm' });
    expect(again.startMs).toBeUndefined();
    await again.target.release();
    // Before it is done there is no time to report.
    const slow = {
      ...ort,
      InferenceSession: {
        create: () =>
          new Promise((done) => setTimeout(() => done({ run: async () => ({}), release: async () => {} }), 30)),
      },
    } as unknown as Ort;
    const started = startOrt(slow);
    expect(ortStartMs(slow)).toBeUndefined();
    expect(await started).toBeNull();
    expect(ortStartMs(slow)).toBeGreaterThanOrEqual(25);
  });

  it('names the target and says onnxruntime could not start, in one line', async () => {
    const { ort: fake } = failingOrt('RuntimeError: Aborted(out of memory)');
    const error = await openModels(fake, { target: TARGET }, { device: 'wasm' }).catch((e: Error) => e);
    expect((error as Error).message).toBe(
      `target model ${TARGET}: onnxruntime could not start: RuntimeError: Aborted(out of memory)`,
    );
  });
});
