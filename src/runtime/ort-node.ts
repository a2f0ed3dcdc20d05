/**
 * onnxruntime-web for Node (tests, CLI, benchmarks): the wasm EP, single-threaded by default so that timings are
 * steady and nothing depends on worker threads.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import * as ort from 'onnxruntime-web';
import hot from './ort-hot-functions.json';
import { defaultStorePath } from './store-node';
import { isThreadCount } from './threads';
import { avoidTierUpStall, compileWithHints, HINTS_V8, v8ReadsHints } from './v8-tiering';
import { addCompilationHints, EAGER_LIFTOFF, EAGER_TURBOFAN } from './wasm-hints';

let configured: number | null = null;
let warnedThreads = false;

/**
 * onnxruntime-web for this process on `numThreads` wasm threads. The count is fixed when onnxruntime's wasm starts,
 * so only the first call sets it: later calls get the same onnxruntime, whatever they ask (see ortThreads()); the
 * first that asks another count gets a process warning saying so (code SPEC_DECODER_WASM_THREADS).
 */
export function ortForNode(numThreads = 1): typeof ort {
  // onnxruntime takes anything and runs one thread for what it cannot use (0: as many as it likes), while
  // ortThreads() would report the number given.
  if (!isThreadCount(numThreads))
    throw new RangeError(`ortForNode: numThreads must be a whole number from 1 to 64; got ${numThreads}`);
  if (configured === null) {
    ort.env.wasm.numThreads = numThreads;
    ort.env.logLevel = 'error';
    configured = numThreads;
  } else if (numThreads !== configured && !warnedThreads) {
    warnedThreads = true;
    process.emitWarning(
      `ortForNode(${numThreads}): onnxruntime already runs on ${configured} wasm thread${configured === 1 ? '' : 's'} in this process (the first call fixes the count); this engine gets ${configured} too`,
      { code: 'SPEC_DECODER_WASM_THREADS' },
    );
  }
  return ort;
}

/** The wasm threads this process's onnxruntime runs with (null before ortForNode). */
export function ortThreads(): number | null {
  return configured;
}

/**
 * How V8 compiles onnxruntime's wasm in a process that loads, generates and ends (the CLI), against the tier-up
 * stall (v8-tiering.ts: a short script's event loop is empty between rounds).
 *
 * Where it can, with compilation hints (wasm-hints.ts): the functions that hold 97.1% of inference's wasm time in
 * fp32 and 96.0% in int8 (136, 86 KB of code) are compiled with TurboFan while the models load, the others a load
 * and a generation run (3,887, 4.4 MB) with Liftoff alongside, the rest with Liftoff when first called, and nothing
 * tiers up later.
 * That needs V8 11 (Node 20) and the onnxruntime-web wasm the hot list was measured on (ort-hot-functions.json).
 * Measured on our 2-core machine, plain decoding, 64 tokens, fresh processes on 2 threads: first generation 5.3
 * ms/token against 12.4 under default tiering and 6.9 on Liftoff only, 1.25x its own steady state, no wait, the
 * load no longer (README, "The first generation").
 *
 * Otherwise by length. Default tiering: first generation 16-24 ms/token (one 0.5-0.7 s wait), steady 3.6 (auto)
 * and 4.5 (plain) ms/token, first result 3.1-3.9 s after process start; Liftoff only: first 6.3-6.7 ms/token, steady
 * 4.8 and 5.4 (a quarter slower), first result 2.1-2.2 s; tier-up with a keep-alive interval (no wait): first 8.6,
 * steady at TurboFan's speed, first result 2.9 s. So Liftoff only up to a few hundred tokens, the keep-alive
 * beyond. On Liftoff code the verify-cost curve is steeper than on TurboFan's (wide calls are compute-bound), so
 * speculation gains less there than in the warmed-up benchmark (the bench's node-cli table).
 *
 * A long-lived process (a server holds handles, so it never waits) needs none of this.
 * SPEC_DECODER_WASM_TIERUP=1 (tier-up, keep-alive) or 0 (Liftoff only) overrides the choice.
 * Returns what to call at the end (the keep-alive's interval is cleared).
 */
export function wasmTieringFor(
  maxNewTokens: number,
  env: NodeJS.ProcessEnv = process.env,
  hints: () => ReturnType<typeof hintedOrtWasm> = hintedOrtWasm,
): () => void {
  // SPEC_DECODER_WASM_TIERUP=1 or 0 overrides the choice (as for WebGPU in Node, ort-node-webgpu.ts).
  const forced = env.SPEC_DECODER_WASM_TIERUP;
  if ((forced === undefined || forced === '') && useWasmCompilationHints(hints).ok) return () => {};
  return avoidTierUpStall(forced === '1' ? true : forced === '0' ? false : maxNewTokens > LIFTOFF_UP_TO);
}

/** Longest generation compiled with Liftoff only (break-even against tier-up measured at 650-800 tokens). */
export const LIFTOFF_UP_TO = 512;

/**
 * The CLI's compilation hints for a library user (src/node.ts): onnxruntime's hot wasm functions compiled with
 * TurboFan while the models load, the rest with Liftoff, nothing tiered up later. The first generation then runs
 * at about the steady speed (1.25x of it against 3.15x under V8's default tiering; README, "The first generation")
 * and Node never waits for background compiles; the steady state is 5-7% slower than a process that has tiered
 * everything up for a while. Call it before the first session is created. It sets process-wide V8 flags: no wasm
 * module compiled afterwards in this process tiers up. Says why not where it cannot apply (another V8 than Node 20's,
 * another onnxruntime-web wasm than the hot list was measured on).
 */
export function useWasmCompilationHints(
  hints: () => ReturnType<typeof hintedOrtWasm> = hintedOrtWasm,
): { ok: true } | { ok: false; reason: string } {
  const hinted = hints();
  if (!hinted.bytes) return { ok: false, reason: hinted.reason };
  compileWithHints();
  ort.env.wasm.wasmBinary = wholeBuffer(hinted.bytes);
  return { ok: true };
}

/**
 * The bytes as an ArrayBuffer of their own: onnxruntime's loader (Emscripten's) copies a Uint8Array it is given as
 * `wasmBinary` (`new Uint8Array(wasmBinary)`) but only views an ArrayBuffer, and a 14 MB copy into fresh memory took
 * 45-65 ms of the main thread here.
 */
export function wholeBuffer(bytes: Uint8Array<ArrayBuffer>): ArrayBuffer {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes.buffer : bytes.slice().buffer;
}

/** The wasm build onnxruntime-web loads in Node for the wasm EP (the one the hot list is measured on). */
export const ORT_WASM = 'ort-wasm-simd-threaded.wasm';

export function ortWasmPath(): string {
  return join(createRequire(import.meta.url).resolve('onnxruntime-web'), '..', ORT_WASM);
}

/**
 * onnxruntime's wasm with compilation hints for its hot functions, or why not: another V8 than the hints were made
 * for, or another wasm than the hot list was measured on (tools/wasm-hot-functions.ts writes a new list).
 *
 * Checking the wasm (its SHA-256) and adding the hints took 80-130 ms of a CLI run that ends in about 2 s, so the
 * hinted copy is kept in `cacheDir` (the records' folder, store-node.ts) under a name made of the wasm's identity
 * on disk (path, inode, size, modification and change times: reinstalling the package changes the last) and the
 * hot list; a later process reads that instead (null: no cache).
 */
export function hintedOrtWasm(
  path = ortWasmPath(),
  v8 = process.versions.v8,
  cacheDir: string | null = dirname(defaultStorePath()),
): { bytes: Uint8Array<ArrayBuffer>; reason?: undefined } | { bytes?: undefined; reason: string } {
  if (!v8ReadsHints(v8)) return { reason: `V8 ${v8} (compilation hints are read by V8 ${HINTS_V8})` };
  if (!existsSync(path)) return { reason: `${path} not found` };
  const cache = cacheDir ? hintedCache(path, cacheDir) : null;
  const kept = cache?.read();
  if (kept) return { bytes: kept };
  const wasm = readFileSync(path);
  if (wasm.length !== hot.bytes || createHash('sha256').update(wasm).digest('hex') !== hot.sha256)
    return {
      reason: `${path} is not the wasm the hot functions were measured on (onnxruntime-web ${hot.onnxruntimeWeb})`,
    };
  const bytes = addCompilationHints(wasm, [
    { functions: hot.functions, hint: EAGER_TURBOFAN },
    { functions: hot.warm, hint: EAGER_LIFTOFF },
  ]);
  cache?.write(bytes);
  return { bytes };
}

const HINTED_PREFIX = 'ort-wasm-hinted-';

/** Where hintedOrtWasm keeps the hinted copy of the wasm at `path`: read it, or write it (errors ignored). */
export function hintedCache(
  path: string,
  dir: string,
): {
  read(): Uint8Array<ArrayBuffer> | null;
  write(bytes: Uint8Array): void;
} {
  const s = statSync(path);
  const key = createHash('sha256')
    .update(JSON.stringify([resolve(path), s.ino, s.size, s.mtimeMs, s.ctimeMs, hot.sha256, hot.functions, hot.warm]))
    .digest('hex')
    .slice(0, 16);
  // The hinted copy's length is in the name: a file of another length is not read.
  const named = (length: number) => join(dir, `${HINTED_PREFIX}${key}-${length}.wasm`);
  const find = () => {
    try {
      return readdirSync(dir).find((f) => f.startsWith(`${HINTED_PREFIX}${key}-`)) ?? null;
    } catch {
      return null;
    }
  };
  return {
    read() {
      const found = find();
      const length = found ? Number(/-(\d+)\.wasm$/.exec(found)?.[1]) : Number.NaN;
      if (!found || !Number.isSafeInteger(length)) return null;
      try {
        const bytes = readFileSync(join(dir, found));
        if (bytes.length !== length) return null;
        return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length) as Uint8Array<ArrayBuffer>;
      } catch {
        return null;
      }
    },
    write(bytes) {
      try {
        mkdirSync(dir, { recursive: true });
        const file = named(bytes.length);
        const partial = `${file}.${process.pid}.tmp`;
        writeFileSync(partial, bytes);
        renameSync(partial, file);
        // Copies for other wasm files (another install, another checkout sharing the folder): the newest one stays.
        const others = readdirSync(dir)
          .filter((f) => f.startsWith(HINTED_PREFIX) && f.endsWith('.wasm') && join(dir, f) !== file)
          .map((f) => ({ f, t: statSync(join(dir, f)).mtimeMs }))
          .sort((a, b) => b.t - a.t);
        for (const { f } of others.slice(1)) rmSync(join(dir, f), { force: true });
      } catch {
        // A folder that cannot be written: the next process adds the hints again.
      }
    },
  };
}
