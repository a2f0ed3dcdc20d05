/**
 * Layer i's cache, as both bodies read and write it: the kept past K/V (gathered by keep_indices when compaction is
 * fused into the call) and the present K/V declared as graph outputs (the body's attention writes them).
 *
 * With hostCache the caller keeps the cache (the wasm runner's own arrays, model/host-cache.ts): the past comes in
 * already compacted and laid out for the attention's MatMuls (keys transposed [kvh, 1, hd, cap], values [kvh, 1, cap,
 * hd]; slots past the cache's length are masked by the bias), and only this call's rows go out (new.{i}.*).
 */
import type { GraphContext } from './llama';
import { newKey, newValue, pastKey, pastValue, presentKey, presentValue } from './signature';

export function layerCache(ctx: GraphContext, i: number): { keptK: string; keptV: string; names: [string, string] } {
  const { g, cfg, T, inputs } = ctx;
  const { numKvHeads: kvh, headDim: hd } = cfg;
  if (ctx.hostCache) {
    g.output(newKey(i), T, [kvh, 1, hd, 'q']);
    g.output(newValue(i), T, [kvh, 1, 'q', hd]);
    return { keptK: pastKey(i), keptV: pastValue(i), names: [newKey(i), newValue(i)] };
  }
  const { keepIndices } = inputs;
  g.output(presentKey(i), T, [1, kvh, 'total', hd]);
  g.output(presentValue(i), T, [1, kvh, 'total', hd]);
  return {
    keptK: keepIndices ? g.op('Gather', [pastKey(i), keepIndices], { axis: 2 }) : pastKey(i),
    keptV: keepIndices ? g.op('Gather', [pastValue(i), keepIndices], { axis: 2 }) : pastValue(i),
    names: [presentKey(i), presentValue(i)],
  };
}
