/**
 * How a one-shot Node process compiles onnxruntime's wasm (wasmTieringFor): with compilation hints for its hot
 * functions where they apply (this V8 and the wasm the hot list was measured on); otherwise Liftoff only up to
 * LIFTOFF_UP_TO tokens, and beyond that tier-up with the event loop held awake (so Node never stops to wait for
 * background compiles) until the process says it is done.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-web';
import { describe, expect, it } from 'vitest';
import hot from './ort-hot-functions.json';
import {
  hintedOrtWasm,
  LIFTOFF_UP_TO,
  ortForNode,
  ortThreads,
  ortWasmPath,
  useWasmCompilationHints,
  wasmTieringFor,
} from './ort-node';
import { HINTS_V8, v8ReadsHints, wasmCompileMode } from './v8-tiering';
import { wasmLayout } from './wasm-hints';

const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
const noHints = () => ({ reason: 'not here' });
/** Compilation hints are read by Node 20's V8 only (the project's CI runs Node 20). */
const hintsHere = v8ReadsHints();

describe('wasm tiering for a one-shot process', () => {
  it.runIf(hintsHere)('compiles with hints where they apply, for a short or a long generation, holding nothing', () => {
    for (const tokens of [64, LIFTOFF_UP_TO + 1]) {
      const before = timers();
      const done = wasmTieringFor(tokens, {});
      expect(wasmCompileMode()).toBe('hinted');
      expect(timers()).toBe(before);
      expect(wasmLayout(new Uint8Array(ort.env.wasm.wasmBinary as Uint8Array)).hinted).toBe(true);
      done();
    }
  });

  it('without hints, holds the event loop awake for a long generation, and lets go when done', () => {
    const before = timers();
    const done = wasmTieringFor(LIFTOFF_UP_TO + 1, {}, noHints);
    expect(wasmCompileMode()).toBe('tier-up');
    expect(timers()).toBe(before + 1);
    done();
    expect(timers()).toBe(before);
  });

  it('without hints, holds nothing for a short one (Liftoff only: no background compiles to wait for)', () => {
    const before = timers();
    const done = wasmTieringFor(64, {}, noHints);
    expect(wasmCompileMode()).toBe('liftoff');
    expect(timers()).toBe(before);
    done();
  });

  it('follows SPEC_DECODER_WASM_TIERUP when it is set (1: tier-up and keep-alive, 0: Liftoff only)', () => {
    const before = timers();
    const up = wasmTieringFor(64, { SPEC_DECODER_WASM_TIERUP: '1' });
    expect(wasmCompileMode()).toBe('tier-up');
    expect(timers()).toBe(before + 1);
    up();
    const off = wasmTieringFor(LIFTOFF_UP_TO + 1, { SPEC_DECODER_WASM_TIERUP: '0' });
    expect(wasmCompileMode()).toBe('liftoff');
    expect(timers()).toBe(before);
    off();
  });
});

describe('compilation hints for a library user', () => {
  it('are applied where they can be, and otherwise say why and change nothing', () => {
    const before = ort.env.wasm.wasmBinary;
    expect(useWasmCompilationHints(() => ({ reason: 'another wasm' }))).toEqual({ ok: false, reason: 'another wasm' });
    expect(ort.env.wasm.wasmBinary).toBe(before);
    if (!hintsHere) return;
    expect(useWasmCompilationHints()).toEqual({ ok: true });
    expect(wasmCompileMode()).toBe('hinted');
    expect(wasmLayout(new Uint8Array(ort.env.wasm.wasmBinary as Uint8Array)).hinted).toBe(true);
  });
});

describe('the hot functions of onnxruntime-web wasm', () => {
  it('belong to the installed wasm (after an upgrade: node --import tsx tools/wasm-hot-functions.ts)', () => {
    const wasm = readFileSync(ortWasmPath());
    expect({ bytes: wasm.length, sha256: createHash('sha256').update(wasm).digest('hex') }).toEqual({
      bytes: hot.bytes,
      sha256: hot.sha256,
    });
    expect(hot.measured.v8.split('.')[0]).toBe(String(HINTS_V8));
  });

  it('make a valid hinted binary on this V8, and say why not elsewhere', () => {
    expect(hintedOrtWasm(ortWasmPath(), '12.4.254.21').reason).toMatch(/V8 12\.4\.254\.21 .*V8 11/);
    if (!hintsHere) return;
    const hinted = hintedOrtWasm(ortWasmPath(), process.versions.v8, null);
    expect(hinted.reason).toBeUndefined();
    const bytes = hinted.bytes as Uint8Array<ArrayBuffer>;
    expect(WebAssembly.validate(bytes)).toBe(true);
    const layout = wasmLayout(bytes);
    expect(layout.hinted).toBe(true);
    for (const f of hot.functions) expect(layout.bodySizes[f - layout.importedFunctions]).toBeGreaterThan(0);

    const other = join(mkdtempSync(join(tmpdir(), 'hints-')), 'ort.wasm');
    writeFileSync(other, readFileSync(ortWasmPath()).subarray(0, 4096));
    expect(hintedOrtWasm(other, process.versions.v8, null).reason).toMatch(
      /is not the wasm the hot functions were measured on/,
    );
    expect(hintedOrtWasm(join(tmpdir(), 'no-such.wasm')).reason).toMatch(/not found/);
  });
});

describe('the hinted wasm kept on disk', () => {
  const v8 = process.versions.v8;
  const wasmFiles = (dir: string) => readdirSync(dir).filter((f) => f.endsWith('.wasm'));

  it.runIf(hintsHere)('is written once, read back by a later call, and made again when the copy is not whole', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hinted-cache-'));
    const first = hintedOrtWasm(ortWasmPath(), v8, dir).bytes as Uint8Array;
    expect(wasmFiles(dir)).toHaveLength(1);
    const kept = join(dir, wasmFiles(dir)[0] as string);
    expect(Buffer.from(readFileSync(kept)).equals(Buffer.from(first))).toBe(true);
    // A later call reads the file: marked bytes of the same length come back as they are.
    const marked = Buffer.from(first);
    marked[marked.length - 1] = (marked[marked.length - 1] as number) ^ 0xff;
    writeFileSync(kept, marked);
    expect(Buffer.from(hintedOrtWasm(ortWasmPath(), v8, dir).bytes as Uint8Array).equals(marked)).toBe(true);
    // A copy of another length than its name says (cut short) is not read: the hints are made again, written whole.
    writeFileSync(kept, marked.subarray(0, 1000));
    expect(Buffer.from(hintedOrtWasm(ortWasmPath(), v8, dir).bytes as Uint8Array).equals(Buffer.from(first))).toBe(
      true,
    );
    expect(wasmFiles(dir)).toHaveLength(1);
    expect(readFileSync(kept).length).toBe(first.length);
  });

  it.runIf(hintsHere)('keeps one entry per wasm file, and only the newest besides the one in use', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hinted-cache-'));
    const copies = [1, 2, 3].map((i) => {
      const copy = join(mkdtempSync(join(tmpdir(), `hinted-wasm-${i}-`)), 'ort.wasm');
      copyFileSync(ortWasmPath(), copy);
      return copy;
    });
    expect(hintedOrtWasm(copies[0], v8, dir).reason).toBeUndefined();
    expect(hintedOrtWasm(copies[1], v8, dir).reason).toBeUndefined();
    expect(wasmFiles(dir)).toHaveLength(2);
    expect(hintedOrtWasm(copies[2], v8, dir).reason).toBeUndefined();
    expect(wasmFiles(dir)).toHaveLength(2);
  });

  it.runIf(hintsHere)('is not needed: a folder that cannot be written still gives the hinted wasm', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'hinted-cache-')), 'a-file');
    writeFileSync(file, 'not a folder');
    const hinted = hintedOrtWasm(ortWasmPath(), v8, join(file, 'cache'));
    expect(hinted.reason).toBeUndefined();
    expect(wasmLayout(hinted.bytes as Uint8Array).hinted).toBe(true);
  });
});

describe('ortForNode', () => {
  it('refuses a thread count onnxruntime would not run (it ran one thread and the report said the number given)', () => {
    for (const n of [0, -1, 2.5, Number.NaN, 65])
      expect(() => ortForNode(n)).toThrow(`ortForNode: numThreads must be a whole number from 1 to 64; got ${n}`);
  });

  it('says so, once, when a later call asks another thread count than the one the process runs on', async () => {
    const warnings: Error[] = [];
    const listen = (w: Error) => warnings.push(w);
    process.on('warning', listen);
    try {
      if (ortThreads() === null) ortForNode(1);
      const first = ortThreads() as number;
      const other = first === 1 ? 2 : 1;
      ortForNode(first);
      ortForNode(other);
      ortForNode(other);
      await new Promise((r) => setImmediate(r));
      const ours = warnings.filter((w) => (w as Error & { code?: string }).code === 'SPEC_DECODER_WASM_THREADS');
      expect(ours.map((w) => w.message)).toEqual([
        `ortForNode(${other}): onnxruntime already runs on ${first} wasm thread${first === 1 ? '' : 's'} in this process (the first call fixes the count); this engine gets ${first} too`,
      ]);
      expect(ortThreads()).toBe(first);
    } finally {
      process.off('warning', listen);
    }
  });
});
