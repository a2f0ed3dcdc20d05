import { describe, expect, it } from 'vitest';
import { firstNonFinite, type TensorEntry } from './safetensors';

/** The element-by-element answer: the index of the first value whose exponent bits are all set. */
function reference(values: number[], exponent: number): number {
  return values.findIndex((v) => (v & exponent) === exponent);
}

const FINITE = { F16: 0x3c00, BF16: 0x3f80 } as const; // 1.0
const SPECIAL = {
  F16: [0x7c00, 0xfc00, 0x7e00, 0x7c01],
  BF16: [0x7f80, 0xff80, 0x7fc0, 0x7f81],
} as const;
const EXPONENT = { F16: 0x7c00, BF16: 0x7f80 } as const;

function entry(dtype: TensorEntry['dtype'], offset: number, byteLength: number): TensorEntry {
  return { name: 't', dtype, shape: [byteLength], file: 'model.safetensors', offset, byteLength };
}

describe('firstNonFinite', () => {
  for (const dtype of ['F16', 'BF16'] as const) {
    it(`${dtype}: finds the first infinity or NaN at every position and byte alignment`, () => {
      // Near-specials that must pass: the largest finite value and negative numbers.
      const nearly = dtype === 'F16' ? [0x7bff, 0xbc00, 0x0001] : [0x7f7f, 0xbf80, 0x0001];
      for (const lead of [0, 1, 2, 3, 5, 6]) {
        for (const n of [0, 1, 2, 3, 4, 7, 8, 9]) {
          for (let bad = -1; bad < n; bad++) {
            for (const special of bad < 0 ? [0] : SPECIAL[dtype]) {
              const values = Array.from({ length: n }, (_, i) =>
                i === bad ? special : (nearly[i % nearly.length] ?? FINITE[dtype]),
              );
              if (bad >= 0 && bad + 1 < n) values[bad + 1] = special; // a second one after it
              const bytes = new Uint8Array(lead + 2 * n + 3);
              for (const [i, v] of values.entries()) {
                bytes[lead + 2 * i] = v & 0xff;
                bytes[lead + 2 * i + 1] = v >> 8;
              }
              const got = firstNonFinite(bytes, entry(dtype, lead, 2 * n));
              expect(got, `${dtype} lead ${lead} n ${n} bad ${bad} ${special.toString(16)}`).toBe(
                reference(values, EXPONENT[dtype]),
              );
            }
          }
        }
      }
    });
  }

  it('F32: finds infinities and NaNs, aligned or not, and passes the largest finite value', () => {
    for (const lead of [0, 1, 4]) {
      for (const bad of [-1, 0, 1, 4]) {
        for (const special of [Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.NaN]) {
          const values = [1, -2, 3.4028234663852886e38, 0.5, 7];
          if (bad >= 0) values[bad] = special;
          const bytes = new Uint8Array(lead + 4 * values.length);
          const view = new DataView(bytes.buffer);
          for (const [i, v] of values.entries()) view.setFloat32(lead + 4 * i, v, true);
          expect(firstNonFinite(bytes, entry('F32', lead, 4 * values.length)), `lead ${lead} bad ${bad}`).toBe(bad);
        }
      }
    }
  });

  it('reads only its own tensor, not the bytes around it', () => {
    const bytes = new Uint8Array([0x00, 0x7c, 0x00, 0x3c, 0x00, 0x3c, 0x00, 0x7c]);
    expect(firstNonFinite(bytes, entry('F16', 2, 4))).toBe(-1);
    expect(firstNonFinite(bytes.subarray(2), entry('F16', 0, 6))).toBe(2);
  });
});
