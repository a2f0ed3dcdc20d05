/**
 * Engines for the methods that run on draft heads. One engine holds one kind of heads, so the benchmark loads, next
 * to the plain pair, one engine per heads method with the bundled target's heads; speedups stay over plain
 * decoding on the pair (a target without heads). A method that uses heads only when they are loaded gets them where
 * users get them by default (auto: the EAGLE head on WebGPU, next to the draft model; defaultHeads). Heads that
 * cannot be loaded are reported and their method skipped.
 */
import { defaultHeads, headsNeeded, type Method, methodSpec } from '../src/engine/drafters/index';
import type { SpecEngine } from '../src/engine/engine';
import type { KeyValueStore } from '../src/engine/store';
import type { GraphVariant } from '../src/model/graph/llama';
import type { Precision } from '../src/model/precision';

export type HeadsFolders = Partial<Record<'medusa' | 'eagle3', string>>;

export async function loadHeadsEngines(
  methods: readonly Method[],
  folders: HeadsFolders,
  /** An engine with these heads, and with the draft model when `withDraft`. */
  load: (heads: string, withDraft: boolean) => Promise<SpecEngine>,
  log: (line: string) => void,
  device: 'wasm' | 'webgpu' = 'wasm',
): Promise<Map<Method, SpecEngine>> {
  const engines = new Map<Method, SpecEngine>();
  for (const m of methods) {
    const spec = methodSpec(m);
    const kind = defaultHeads(spec, device);
    const folder = kind ? folders[kind] : undefined;
    if (!kind || !folder) continue;
    try {
      engines.set(m, await load(folder, headsNeeded(spec) === null));
    } catch (e) {
      log(`${m}: heads ${folder} not loaded (${(e as Error).message}); skipped`);
    }
  }
  return engines;
}

export async function releaseAll(engines: Map<Method, SpecEngine>): Promise<void> {
  for (const e of engines.values()) await e.release();
}

/** What one of the benchmark's engines is loaded with, besides the target. */
export interface EngineExtras {
  draft?: true;
  heads?: string;
  layerSwitches?: true;
  /**
   * The target's graph variant. Graph 'auto' picks a variant by timing, so two engines loaded in one process can run
   * different graphs; their last bits differ, a near-tie then falls the other way, and a method on the second engine
   * no longer gives the pair's plain greedy text (on lavapipe `eagle` and `medusa` did not, `…T1133-…`). The
   * benchmark loads every further engine with the pair's variant.
   */
  graph?: GraphVariant;
}

/** The load options an engine's extras stand for, with the draft model's folder (Node path or browser URL). */
export function extrasOptions(
  extras: EngineExtras,
  draft: string,
): { draft?: string; heads?: string; layerSwitches?: true; graph?: GraphVariant } {
  return {
    ...(extras.draft ? { draft } : {}),
    ...(extras.heads ? { heads: extras.heads } : {}),
    ...(extras.layerSwitches ? { layerSwitches: true } : {}),
    ...(extras.graph ? { graph: extras.graph } : {}),
  };
}

/**
 * The engines the benchmark runs (in Node and in the browser's worker alike): the bundled pair for most methods, one
 * engine per heads method with the bundled heads, and for swift the target built with layer switches (a few percent
 * slower per call, so not the pair's).
 */
export async function benchEngines(
  methods: readonly Method[],
  heads: HeadsFolders,
  load: (extras: EngineExtras) => Promise<SpecEngine>,
  log: (line: string) => void,
  device: 'wasm' | 'webgpu' = 'wasm',
  /**
   * Whether a draft model may be loaded at all (false: bench --no-draft, or the GPU kit without the draft model's
   * folder). Without it the methods that need it are skipped and `auto` drafts with what is left.
   */
  draftModel = true,
): Promise<{ engine: SpecEngine; engineFor: (m: Method) => SpecEngine; release: () => Promise<void> }> {
  // The draft model only where a method uses it, so a run of methods that need none (plain decoding, lookup,
  // lookahead, the heads) goes without one: the GPU kit then carries the EAGLE head in its place.
  const usesDraft =
    draftModel &&
    methods.some((m) => {
      const spec = methodSpec(m);
      return [...spec.needs, ...(spec.optional ?? [])].includes('draft-model');
    });
  const engine = await load(usesDraft ? { draft: true } : {});
  const graph = engine.target.graph.variant;
  const headsEngines = await loadHeadsEngines(
    methods,
    heads,
    (h, withDraft) => load({ heads: h, graph, ...(withDraft && draftModel ? { draft: true as const } : {}) }),
    log,
    device,
  );
  const swiftEngine = methods.includes('swift') ? await load({ layerSwitches: true, graph }) : null;
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

/**
 * benchEngines on wasm in Node, with the bundled models (in `precision`, default the engine's own: auto; with the
 * target exact when `exact`; keeping what they learn in `store` when given: bench --remember).
 */
export async function nodeWasmEngines(
  methods: readonly Method[],
  threads: number,
  log: (line: string) => void,
  precision?: Precision,
  exact = false,
  draftModel = true,
  store?: KeyValueStore,
): ReturnType<typeof benchEngines> {
  const [{ SpecEngine: Engine }, { ortForNode }, { DEFAULT_HEADS }] = await Promise.all([
    import('../src/engine/engine'),
    import('../src/runtime/ort-node'),
    import('../src/cli/args'),
  ]);
  return benchEngines(
    methods,
    DEFAULT_HEADS,
    (extras) =>
      Engine.load(ortForNode(threads), {
        target: 'public/models/austen-target',
        device: 'wasm',
        ...(precision ? { precision } : {}),
        ...(exact ? { exact } : {}),
        ...(store ? { store } : {}),
        ...extrasOptions(extras, 'public/models/austen-draft'),
      }),
    log,
    'wasm',
    draftModel,
  );
}
