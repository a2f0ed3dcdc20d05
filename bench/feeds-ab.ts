/**
 * What the GPU-buffer inputs (src/model/gpu-feeds.ts) save a target call, measured in one process: two engines on
 * the same target and graph variant, one loaded with the feeds off (globalThis.SPEC_DECODER_GPU_FEEDS = '0'), their
 * verify costs measured alternately, round after round, in alternating order. Between processes a call's time on an
 * H100 varied by a third, more than the few milliseconds the inputs save, so only an in-process A/B can show it.
 */
import { SpecEngine } from '../src/engine/engine';
import { median } from '../src/util/median';

export interface FeedsAB {
  graph: string;
  rounds: number;
  /** Median ms per call at each width, with the inputs in GPU buffers and from the CPU. */
  on: { q: number; ms: number }[];
  off: { q: number; ms: number }[];
}

const G = globalThis as { SPEC_DECODER_GPU_FEEDS?: string };

export async function feedsAB(
  ort: Parameters<typeof SpecEngine.load>[0],
  target: string,
  rounds = 10,
  qs: readonly number[] = [1, 16],
): Promise<FeedsAB> {
  const load = (graph?: 'plain' | 'fused' | 'hybrid') =>
    SpecEngine.load(ort, { target, device: 'webgpu', calibration: 'never', ...(graph ? { graph } : {}) });
  const on = await load();
  let off: SpecEngine | null = null;
  try {
    G.SPEC_DECODER_GPU_FEEDS = '0';
    try {
      off = await load(on.target.graph.variant);
    } finally {
      delete G.SPEC_DECODER_GPU_FEEDS;
    }
    const times = { on: qs.map(() => [] as number[]), off: qs.map(() => [] as number[]) };
    for (let i = 0; i < rounds; i++) {
      const order = i % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const);
      for (const name of order) {
        const { curve } = await (name === 'on' ? on : (off as SpecEngine)).calibrate(qs, 2);
        curve.points.forEach((p, k) => {
          times[name][k]?.push(p.ms);
        });
      }
    }
    const medians = (t: number[][]) => qs.map((q, k) => ({ q, ms: median(t[k] ?? []) }));
    return { graph: on.target.graph.variant, rounds, on: medians(times.on), off: medians(times.off) };
  } finally {
    await on.release();
    await off?.release();
  }
}

export function feedsABLine(r: FeedsAB | { error: string }): string {
  if ('error' in r) return `Inputs in GPU buffers against CPU inputs: error: ${r.error}`;
  const f = (p: { q: number; ms: number }[]) => p.map((x) => `q=${x.q} ${x.ms.toFixed(2)}`).join(', ');
  return `Inputs in GPU buffers against CPU inputs, one process, ${r.rounds} alternating rounds (${r.graph} graph; ms per call, median): ${f(r.on)} against ${f(r.off)}.`;
}
