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
