/**
 * The cold benchmark's measurement, the same in a fresh Node process (cold-run.ts) and a fresh browser worker
 * (cold-worker.ts): the first three generations of a freshly loaded engine, then its steady state.
 */
import type { Method } from '../src/engine/drafters/index';
import type { SpecEngine } from '../src/engine/engine';
import { median } from '../src/util/median';
import { runOnce } from './harness';

export interface FirstAndSteady {
  /** The first three generations. */
  generations: { msPerToken: number; wallMs: number; tokens: number }[];
  /** performance.now() when the first generation ended: from the process's or the worker's start. */
  firstResultMs: number;
  /** Median ms/token of the generations after those three. */
  steadyMsPerToken: number;
}

export async function firstAndSteady(
  engine: SpecEngine,
  method: Method,
  prompt: string,
  maxNewTokens: number,
  steadyRuns: number,
): Promise<FirstAndSteady> {
  const once = async () => {
    const { stats } = await runOnce(engine, method, prompt, maxNewTokens);
    return { msPerToken: stats.wallMs / stats.tokens, wallMs: stats.wallMs, tokens: stats.tokens };
  };
  const first = await once();
  const firstResultMs = performance.now();
  const generations = [first, await once(), await once()];
  const steady: number[] = [];
  for (let i = 0; i < steadyRuns; i++) steady.push((await once()).msPerToken);
  return { generations, firstResultMs, steadyMsPerToken: median(steady) };
}
