/**
 * Engines for the methods that run on draft heads. One engine holds one kind of heads, so the benchmark loads, next
 * to the plain pair, one engine per heads method with the bundled target's heads; speedups stay over plain
 * decoding on the pair (a target without heads). Heads that cannot be loaded are reported and their method skipped.
 */
import { headsNeeded, type Method, methodSpec } from '../src/engine/drafters/index';
import type { SpecEngine } from '../src/engine/engine';

export type HeadsFolders = Partial<Record<'medusa' | 'eagle3', string>>;

export async function loadHeadsEngines(
  methods: readonly Method[],
  folders: HeadsFolders,
  load: (heads: string) => Promise<SpecEngine>,
  log: (line: string) => void,
): Promise<Map<Method, SpecEngine>> {
  const engines = new Map<Method, SpecEngine>();
  for (const m of methods) {
    const kind = headsNeeded(methodSpec(m));
    const folder = kind ? folders[kind] : undefined;
    if (!kind || !folder) continue;
    try {
      engines.set(m, await load(folder));
    } catch (e) {
      log(`${m}: heads ${folder} not loaded (${(e as Error).message}); skipped`);
    }
  }
  return engines;
}

export async function releaseAll(engines: Map<Method, SpecEngine>): Promise<void> {
  for (const e of engines.values()) await e.release();
}

/**
 * The engines the benchmark runs in Node on wasm: the bundled pair for most methods, one engine per heads method
 * with the bundled heads, and for swift the target built with layer switches (a few percent slower per call, so not
 * the pair's).
 */
export async function nodeWasmEngines(
  methods: readonly Method[],
  threads: number,
  log: (line: string) => void,
): Promise<{ engine: SpecEngine; engineFor: (m: Method) => SpecEngine; release: () => Promise<void> }> {
  const [{ SpecEngine: Engine }, { ortForNode }, { DEFAULT_HEADS }] = await Promise.all([
    import('../src/engine/engine'),
    import('../src/runtime/ort-node'),
    import('../src/cli/args'),
  ]);
  const target = 'public/models/austen-target';
  const engine = await Engine.load(ortForNode(threads), {
    target,
    draft: 'public/models/austen-draft',
    device: 'wasm',
  });
  const headsEngines = await loadHeadsEngines(
    methods,
    DEFAULT_HEADS,
    (heads) => Engine.load(ortForNode(threads), { target, heads, device: 'wasm' }),
    log,
  );
  const swiftEngine = methods.includes('swift')
    ? await Engine.load(ortForNode(threads), { target, device: 'wasm', layerSwitches: true })
    : null;
  return {
    engine,
    engineFor: (m) => (m === 'swift' && swiftEngine ? swiftEngine : (headsEngines.get(m) ?? engine)),
    release: async () => {
      await engine.release();
      await releaseAll(headsEngines);
      await swiftEngine?.release();
    },
  };
}
