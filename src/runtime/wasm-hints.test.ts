/**
 * The compilation hints section (wasm-hints.ts) on a small hand-made module: where it goes, that the module stays
 * valid and runs the same, and, in a fresh Node process with the flags compileWithHints sets, that V8 compiles the
 * hinted functions up front (with TurboFan or Liftoff, as hinted) and the others with Liftoff when first called.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { v8ReadsHints } from './v8-tiering';
import { addCompilationHints, EAGER_LIFTOFF, EAGER_TURBOFAN, wasmLayout } from './wasm-hints';

const section = (id: number, payload: number[]) => [id, payload.length, ...payload];
const name = (s: string) => [s.length, ...new TextEncoder().encode(s)];

/**
 * A module importing one function (index 0) and declaring three, `f1`..`f3` (indices 1-3), each returning
 * `seed * k` for its k after a little loop (so it has a body worth compiling).
 */
function tinyModule(): Uint8Array<ArrayBuffer> {
  const body = (k: number) => {
    // (local i32) loop: local0 += 1, br_if while local0 < 10; then local0 * k
    const code = [
      1,
      1,
      0x7f, // one local of type i32
      0x03,
      0x40, // loop (empty block type)
      0x20,
      0,
      0x41,
      1,
      0x6a,
      0x21,
      0, // local.get 0; i32.const 1; i32.add; local.set 0
      0x20,
      0,
      0x41,
      10,
      0x48,
      0x0d,
      0, // local.get 0; i32.const 10; i32.lt_s; br_if 0
      0x0b, // end loop
      0x20,
      0,
      0x41,
      k,
      0x6c, // local.get 0; i32.const k; i32.mul
      0x0b, // end
    ];
    return [code.length, ...code];
  };
  const exports = [3, ...[1, 2, 3].flatMap((f) => [...name(`f${f}`), 0, f])];
  const code = [3, ...body(2), ...body(3), ...body(5)];
  return new Uint8Array([
    0,
    0x61,
    0x73,
    0x6d,
    1,
    0,
    0,
    0,
    ...section(1, [1, 0x60, 0, 1, 0x7f]), // type 0: () -> i32
    ...section(2, [1, ...name('env'), ...name('g'), 0, 0]), // import env.g: type 0
    ...section(3, [3, 0, 0, 0]), // three functions of type 0
    ...section(7, exports),
    ...section(10, code),
  ]);
}

describe('compilation hints', () => {
  it('reads the layout: imports, declared functions, body sizes', () => {
    const layout = wasmLayout(tinyModule());
    expect(layout.importedFunctions).toBe(1);
    expect(layout.declaredFunctions).toBe(3);
    expect(layout.bodySizes).toEqual([26, 26, 26]);
    expect(layout.hinted).toBe(false);
    expect(() => wasmLayout(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]))).toThrow(/not a wasm binary/);
  });

  it('adds one byte per declared function after the function section; the module stays valid and runs the same', async () => {
    const plain = tinyModule();
    const hinted = addCompilationHints(plain, [
      { functions: [2], hint: EAGER_TURBOFAN },
      { functions: [3], hint: EAGER_LIFTOFF },
    ]);
    expect(WebAssembly.validate(hinted)).toBe(true);
    const layout = wasmLayout(hinted);
    expect(layout.hinted).toBe(true);
    expect(layout.bodySizes).toEqual([26, 26, 26]);
    const header = 1 + 1 + name('compilationHints').length + 1;
    expect(hinted.length).toBe(plain.length + header + 3);
    const hints = hinted.subarray(layout.afterFunctionSection + header, layout.afterFunctionSection + header + 3);
    expect([...hints]).toEqual([0, EAGER_TURBOFAN, EAGER_LIFTOFF]);
    const imports = { env: { g: () => 0 } };
    const run = async (bytes: Uint8Array<ArrayBuffer>) => {
      const { instance } = await WebAssembly.instantiate(bytes, imports);
      const f = instance.exports as Record<string, () => number>;
      return [f.f1?.(), f.f2?.(), f.f3?.()];
    };
    expect(await run(hinted)).toEqual([20, 30, 50]);
    expect(await run(plain)).toEqual([20, 30, 50]);
  });

  it('refuses an import, an index past the functions, a function hinted twice, a binary hinted already', () => {
    const plain = tinyModule();
    const turbofan = (...functions: number[]) => [{ functions, hint: EAGER_TURBOFAN }];
    expect(() => addCompilationHints(plain, turbofan(0))).toThrow(/function 0 is not a declared function/);
    expect(() => addCompilationHints(plain, turbofan(4))).toThrow(/function 4 is not a declared function/);
    expect(() => addCompilationHints(plain, [...turbofan(1, 2), { functions: [2], hint: EAGER_LIFTOFF }])).toThrow(
      /function 2 is given two hints/,
    );
    expect(() => addCompilationHints(plain, [{ functions: [1], hint: 0 }])).toThrow(/hint 0 is not a hint byte/);
    expect(() => addCompilationHints(addCompilationHints(plain, turbofan(1)), turbofan(2))).toThrow(
      /already has compilation hints/,
    );
  });

  it.runIf(v8ReadsHints())(
    "make V8 compile the hinted functions up front, with TurboFan or Liftoff, the rest with Liftoff when called (compileWithHints' flags)",
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'hints-'));
      writeFileSync(
        join(dir, 'm.wasm'),
        addCompilationHints(tinyModule(), [
          { functions: [2], hint: EAGER_TURBOFAN },
          { functions: [3], hint: EAGER_LIFTOFF },
        ]),
      );
      const tiering = fileURLToPath(new URL('./v8-tiering.ts', import.meta.url));
      writeFileSync(
        join(dir, 'run.mts'),
        [
          `import { readFileSync } from 'node:fs';`,
          `import { compileWithHints } from ${JSON.stringify(tiering)};`,
          'compileWithHints();',
          `const m = await WebAssembly.instantiate(readFileSync(${JSON.stringify(join(dir, 'm.wasm'))}), { env: { g: () => 0 } });`,
          'const f = m.instance.exports;',
          "console.log('calling');",
          'console.log(JSON.stringify([f.f1(), f.f2(), f.f3()]));',
        ].join('\n'),
      );
      const out = execFileSync(
        process.execPath,
        ['--trace-wasm-compilation-times', '--import', 'tsx', join(dir, 'run.mts')],
        { encoding: 'utf8' },
      );
      const [before, after] = out.split('calling\n');
      const tier = (f: number, text = out) => new RegExp(`#${f} using (\\w+)`).exec(text ?? '')?.[1];
      expect([tier(1), tier(2), tier(3)]).toEqual(['Liftoff', 'TurboFan', 'Liftoff']);
      // Compiled as the module compiles: the two hinted functions; the other one once it is called.
      expect([tier(1, before), tier(2, before), tier(3, before)]).toEqual([undefined, 'TurboFan', 'Liftoff']);
      expect(tier(1, after)).toBe('Liftoff');
      expect(out).toContain('[20,30,50]');
    },
  );
});
