/**
 * Counts of the Dawn calls (WebGPU in Node) made while a function runs, for tests that check what a model call costs
 * in transfers: createBuffer (our feeds' own buffers apart, as feedBuffer), mapAsync (a download each), submit, and
 * upload: onnxruntime uploads a CPU tensor through a mappable staging buffer of its own (GPUBufferUsage.MAP_WRITE).
 */
export async function countingDawnCalls<T>(
  f: () => Promise<T>,
): Promise<{ result: T; counts: Record<string, number> }> {
  const G = globalThis as unknown as Record<string, { prototype: Record<string, unknown> }>;
  const counts: Record<string, number> = {};
  const wrapped: [Record<string, unknown>, string, unknown][] = [];
  for (const [cls, name] of [
    ['GPUDevice', 'createBuffer'],
    ['GPUBuffer', 'mapAsync'],
    ['GPUQueue', 'submit'],
  ] as const) {
    const proto = (G[cls] as { prototype: Record<string, unknown> }).prototype;
    const orig = proto[name] as (...a: unknown[]) => unknown;
    wrapped.push([proto, name, orig]);
    proto[name] = function (this: unknown, ...a: unknown[]) {
      const descriptor = name === 'createBuffer' ? (a[0] as GPUBufferDescriptor) : null;
      // The feeds' own buffers (made once, and again when one grows) are counted apart.
      const ours = descriptor?.label?.startsWith('feed ') === true;
      const key = ours ? 'feedBuffer' : name;
      counts[key] = (counts[key] ?? 0) + 1;
      if (descriptor && !ours && (descriptor.usage & 0x2) !== 0) counts.upload = (counts.upload ?? 0) + 1;
      return orig.apply(this, a);
    };
  }
  try {
    return { result: await f(), counts };
  } finally {
    for (const [proto, name, orig] of wrapped) proto[name] = orig;
  }
}
