/** A session that cannot be created because the page forbids WebAssembly is blamed on the page, not the model. */
import { describe, expect, it } from 'vitest';
import { blockedByCsp, CSP_BLOCKS_WASM } from './runner';

describe('a page whose Content-Security-Policy blocks WebAssembly', () => {
  it("is told so in one line, naming 'wasm-unsafe-eval', where onnxruntime said emscripten's words", () => {
    // What onnxruntime-web threw in Chromium under `script-src 'self'` (no 'wasm-unsafe-eval').
    const chromium =
      "no available backend found. ERR: [wasm] RuntimeError: Aborted(CompileError: WebAssembly.instantiate(): Compiling or instantiating WebAssembly module violates the following Content Security policy directive because 'unsafe-eval' is not an allowed source of script in the following Content Security Policy directive: \"script-src 'self'\".). Build with -sASSERTIONS for more info.";
    expect(blockedByCsp(chromium)).toBe(true);
    expect(CSP_BLOCKS_WASM).toMatch(/Content-Security-Policy.*'wasm-unsafe-eval'/);
    expect(CSP_BLOCKS_WASM).not.toMatch(/\n/);
    // Other session errors stay the model's (and WebGPU's fallback to wasm still sees them).
    expect(blockedByCsp('no available backend found. ERR: [webgpu] Error: no adapter')).toBe(false);
    expect(blockedByCsp('Load model from buffer failed: Protobuf parsing failed.')).toBe(false);
  });
});
