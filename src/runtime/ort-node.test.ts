/**
 * How a one-shot Node process compiles onnxruntime's wasm (wasmTieringFor): Liftoff only up to LIFTOFF_UP_TO tokens,
 * and beyond that tier-up with the event loop held awake (so Node never stops to wait for background compiles) until
 * the process says it is done.
 */
import { describe, expect, it } from 'vitest';
import { LIFTOFF_UP_TO, wasmTieringFor } from './ort-node';

const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

describe('wasm tiering for a one-shot process', () => {
  it('holds the event loop awake for a long generation, and lets go when done', () => {
    const before = timers();
    const done = wasmTieringFor(LIFTOFF_UP_TO + 1);
    expect(timers()).toBe(before + 1);
    done();
    expect(timers()).toBe(before);
  });

  it('holds nothing for a short one (Liftoff only: no background compiles to wait for)', () => {
    const before = timers();
    const done = wasmTieringFor(64);
    expect(timers()).toBe(before);
    done();
  });

  it('follows SPEC_DECODER_WASM_TIERUP when it is set (1: tier-up and keep-alive, 0: Liftoff only)', () => {
    const before = timers();
    const up = wasmTieringFor(64, { SPEC_DECODER_WASM_TIERUP: '1' });
    expect(timers()).toBe(before + 1);
    up();
    const off = wasmTieringFor(LIFTOFF_UP_TO + 1, { SPEC_DECODER_WASM_TIERUP: '0' });
    expect(timers()).toBe(before);
    off();
  });
});
