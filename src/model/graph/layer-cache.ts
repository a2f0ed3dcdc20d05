/**
 * Layer i's cache, as both bodies read and write it: the kept past K/V (gathered by keep_indices when compaction is
 * fused into the call) and the present K/V declared as graph outputs (the body's attention writes them).
 */
import type { GraphContext } from './llama';
import { pastKey, pastValue, presentKey, presentValue } from './signature';

export function layerCache(ctx: GraphContext, i: number): { keptK: string; keptV: string } {
  const { g, cfg, T, inputs } = ctx;
  const { keepIndices } = inputs;
  g.output(presentKey(i), T, [1, cfg.numKvHeads, 'total', cfg.headDim]);
  g.output(presentValue(i), T, [1, cfg.numKvHeads, 'total', cfg.headDim]);
  return {
    keptK: keepIndices ? g.op('Gather', [pastKey(i), keepIndices], { axis: 2 }) : pastKey(i),
    keptV: keepIndices ? g.op('Gather', [pastValue(i), keepIndices], { axis: 2 }) : pastValue(i),
  };
}
