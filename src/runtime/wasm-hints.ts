/**
 * Compilation hints for onnxruntime's wasm in a one-shot Node process (the CLI). V8 11 (Node 20) reads a custom
 * section `compilationHints` (behind `--experimental-wasm-compilation-hints`): one byte per declared function with
 * its compile strategy and tiers. We mark the few hundred functions that inference actually spends its time in
 * (measured by tools/wasm-hot-functions.ts, listed in ort-hot-functions.json) "eager, TurboFan": V8 compiles them
 * with its optimising compiler on background threads while the models load, and the few thousand others a load and a
 * generation run (the "warm" list beside it) "eager, Liftoff": compiled on those threads too rather than on first
 * call, on the main thread (one of them, 0.9 MB of body that builds onnxruntime's kernel registry, took 0.16 s there).
 * Everything else is compiled with Liftoff when first called, and nothing tiers up later. The first generation then
 * runs on optimised kernels from its first token, without the background compiles that make a tier-up process wait
 * (v8-tiering.ts). The binary is changed in memory only: onnxruntime gets it as `env.wasm.wasmBinary`.
 */

/** Strategy eager (2), baseline tier optimised (2 << 2), top tier optimised (2 << 4): see V8's module decoder. */
export const EAGER_TURBOFAN = 0x2a;

/**
 * Strategy eager (2), baseline and top tier baseline (1 << 2, 1 << 4): compiled with Liftoff while the module
 * compiles (on V8's background threads, while the models are read) instead of on first call (on the thread that
 * calls it: the main thread, for everything a session's creation runs).
 */
export const EAGER_LIFTOFF = 0x16;

/** The section's name in the binary. */
const SECTION = 'compilationHints';

function leb(bytes: Uint8Array, at: number): { value: number; next: number } {
  let value = 0;
  let scale = 1;
  let p = at;
  for (;;) {
    const b = bytes[p++];
    if (b === undefined) throw new Error('truncated wasm binary');
    value += (b & 0x7f) * scale;
    scale *= 128;
    if (!(b & 0x80)) return { value, next: p };
  }
}

function encodeLeb(n: number): number[] {
  const out: number[] = [];
  let rest = n;
  do {
    let b = rest & 0x7f;
    rest = Math.floor(rest / 128);
    if (rest) b |= 0x80;
    out.push(b);
  } while (rest);
  return out;
}

/** Where a wasm binary's function section ends, and how many functions it imports and declares. */
export interface WasmLayout {
  importedFunctions: number;
  declaredFunctions: number;
  /** Byte offset just past the function section: where the hints go (after it, before the code section). */
  afterFunctionSection: number;
  /** Whether the binary already has a compilationHints section. */
  hinted: boolean;
  /** Byte size of each declared function's body (from the code section), in declaration order. */
  bodySizes: number[];
}

export function wasmLayout(bytes: Uint8Array): WasmLayout {
  if (bytes.length < 8 || bytes[0] !== 0 || bytes[1] !== 0x61 || bytes[2] !== 0x73 || bytes[3] !== 0x6d)
    throw new Error('not a wasm binary');
  const name = (at: number) => {
    const n = leb(bytes, at);
    return { text: new TextDecoder().decode(bytes.subarray(n.next, n.next + n.value)), next: n.next + n.value };
  };
  let p = 8;
  let importedFunctions = 0;
  let declaredFunctions = -1;
  let afterFunctionSection = -1;
  let hinted = false;
  const bodySizes: number[] = [];
  while (p < bytes.length) {
    const id = bytes[p] as number;
    const size = leb(bytes, p + 1);
    const start = size.next;
    const end = start + size.value;
    if (id === 0 && name(start).text === SECTION) hinted = true;
    if (id === 2) {
      const count = leb(bytes, start);
      let at = count.next;
      for (let i = 0; i < count.value; i++) {
        at = name(name(at).next).next; // module, field
        const kind = bytes[at++];
        if (kind === 0) {
          at = leb(bytes, at).next; // type index
          importedFunctions++;
        } else if (kind === 1 || kind === 2) {
          if (kind === 1) at++; // the table's element type
          const flags = leb(bytes, at);
          at = leb(bytes, flags.next).next;
          if (flags.value & 1) at = leb(bytes, at).next;
        } else if (kind === 3)
          at += 2; // value type, mutability
        else if (kind === 4)
          at = leb(bytes, at + 1).next; // attribute, type index
        else throw new Error(`unknown import kind ${kind}`);
      }
    }
    if (id === 3) {
      declaredFunctions = leb(bytes, start).value;
      afterFunctionSection = end;
    }
    if (id === 10) {
      const count = leb(bytes, start);
      let at = count.next;
      for (let i = 0; i < count.value; i++) {
        const body = leb(bytes, at);
        bodySizes.push(body.value);
        at = body.next + body.value;
      }
    }
    p = end;
  }
  if (declaredFunctions < 0) throw new Error('the wasm binary has no function section');
  return { importedFunctions, declaredFunctions, afterFunctionSection, hinted, bodySizes };
}

/** A hint and the functions it is given to (indices as V8's profiler and traces give them, imports counted). */
export interface HintGroup {
  functions: readonly number[];
  hint: number;
}

/**
 * A copy of `bytes` with a compilationHints section: each group's hint for its functions, the default (0: V8
 * decides, which is lazy Liftoff under Node's flags) for every other declared function. A function in two groups is
 * refused.
 */
export function addCompilationHints(bytes: Uint8Array, groups: readonly HintGroup[]): Uint8Array<ArrayBuffer> {
  const layout = wasmLayout(bytes);
  if (layout.hinted) throw new Error('the wasm binary already has compilation hints');
  const hints = new Uint8Array(layout.declaredFunctions);
  for (const { functions, hint } of groups) {
    if (!Number.isInteger(hint) || hint < 1 || hint > 0xff) throw new Error(`hint ${hint} is not a hint byte`);
    for (const f of functions) {
      const i = f - layout.importedFunctions;
      if (!Number.isInteger(i) || i < 0 || i >= hints.length)
        throw new Error(`function ${f} is not a declared function of this binary`);
      if (hints[i]) throw new Error(`function ${f} is given two hints`);
      hints[i] = hint;
    }
  }
  const nameBytes = new TextEncoder().encode(SECTION);
  const payload = [...encodeLeb(nameBytes.length), ...nameBytes, ...encodeLeb(hints.length)];
  const header = [0, ...encodeLeb(payload.length + hints.length), ...payload];
  const out = new Uint8Array(bytes.length + header.length + hints.length);
  const at = layout.afterFunctionSection;
  out.set(bytes.subarray(0, at), 0);
  out.set(header, at);
  out.set(hints, at + header.length);
  out.set(bytes.subarray(at), at + header.length + hints.length);
  return out;
}
