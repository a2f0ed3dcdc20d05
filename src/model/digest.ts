/**
 * A short digest of a model's weight files, to tell one set of weights from another of the same shape and size
 * (a retrained model): FNV-1a over each file's name and length and 65,536 bytes sampled evenly across it. Retraining
 * changes essentially every weight, so any sample catches it, for well under a millisecond where hashing every byte
 * of a 28 MB model would take tens; a change of a few weights can slip through, which is not what it is for.
 */
const SAMPLES = 65_536;

export function weightDigest(files: ReadonlyMap<string, Uint8Array>): string {
  let h = 0x811c9dc5;
  const mix = (byte: number) => {
    h ^= byte & 0xff;
    h = Math.imul(h, 0x01000193) >>> 0;
  };
  for (const name of [...files.keys()].sort()) {
    const bytes = files.get(name) as Uint8Array;
    for (const c of new TextEncoder().encode(`${name}:${bytes.byteLength};`)) mix(c);
    const step = Math.max(1, Math.floor(bytes.byteLength / SAMPLES));
    for (let i = bytes.byteLength - 1; i >= 0; i -= step) mix(bytes[i] as number);
  }
  return h.toString(16).padStart(8, '0');
}
