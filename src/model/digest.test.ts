import { describe, expect, it } from 'vitest';
import { weightDigest } from './digest';

describe('weight digest', () => {
  it('tells weights of the same size apart and gives the same weights the same digest', () => {
    const bytes = new Uint8Array(1 << 20).map((_, i) => (i * 2654435761) >>> 24);
    const files = new Map([['model.safetensors', bytes]]);
    expect(weightDigest(files)).toMatch(/^[0-9a-f]{8}$/);
    expect(weightDigest(new Map([['model.safetensors', bytes.slice()]]))).toBe(weightDigest(files));
    // A retrained model: every weight moves (here every byte).
    expect(weightDigest(new Map([['model.safetensors', bytes.map((b) => b ^ 0x5a)]]))).not.toBe(weightDigest(files));
    // The same bytes under another file name, or cut short.
    expect(weightDigest(new Map([['other.safetensors', bytes]]))).not.toBe(weightDigest(files));
    expect(weightDigest(new Map([['model.safetensors', bytes.subarray(1)]]))).not.toBe(weightDigest(files));
  });
});
