/**
 * Layer i's cache, as both bodies read and write it: the kept past K/V (gathered by keep_indices when compaction is
 * fused into the call) and the present K/V declared as graph outputs (the body's attention writes them).
 *
 * With hostCache the caller keeps the cache (the wasm runner's own arrays, model/host-cache.ts): the past comes in
 * already compacted and laid out for the attention's MatMuls (keys transposed [kvh, 1, hd, cap], values [kvh, 1, cap,
 * hd]; slots past the cache's length are masked by the bias), and only this call's rows go out (new.{i}.*).
 */
import type { GraphContext } from './llama';
import type { OnnxGraph } from './onnx';
import { NEW_KV, newKey, newValue, pastKey, pastValue, presentKey, presentValue } from './signature';

export function layerCache(ctx: GraphContext, i: number): { keptK: string; keptV: string; names: [string, string] } {
  const { g, cfg, T, inputs } = ctx;
  const { numKvHeads: kvh, headDim: hd } = cfg;
  // With hostCache the new rows are values of the graph, joined into NEW_KV once every layer is built (joinNewRows).
  if (ctx.hostCache) return { keptK: pastKey(i), keptV: pastValue(i), names: [newKey(i), newValue(i)] };
  const { keepIndices } = inputs;
  g.output(presentKey(i), T, [1, kvh, 'total', hd]);
  g.output(presentValue(i), T, [1, kvh, 'total', hd]);
  return {
    keptK: keepIndices ? g.op('Gather', [pastKey(i), keepIndices], { axis: 2 }) : pastKey(i),
    keptV: keepIndices ? g.op('Gather', [pastValue(i), keepIndices], { axis: 2 }) : pastValue(i),
    names: [presentKey(i), presentValue(i)],
  };
}

/** With hostCache: every layer's new rows, flattened, in the one output NEW_KV (layer by layer, keys first). */
export function joinNewRows(ctx: GraphContext): void {
  const { g, T, layers } = ctx;
  const flat = g.constInt64([-1]);
  const parts: string[] = [];
  for (let i = 0; i < layers; i++) parts.push(g.op('Reshape', [newKey(i), flat]), g.op('Reshape', [newValue(i), flat]));
  g.op('Concat', parts, { axis: 0 }, NEW_KV);
  g.output(NEW_KV, T, ['new_kv']);
}

/**
 * This call's keys and values [1, kvh, q, hd] joined to the kept cache for the attention's MatMuls, which read keys
 * [kvh, 1, hd, total] and values [kvh, 1, total, hd] (the cache's batch axis moved into the broadcast axis). Also
 * returns the K/V the graph outputs, named `names`: the present cache [1, kvh, total, hd] each, or with hostCache
 * this call's rows alone in the caller's layouts (then the kept cache comes in the MatMuls' layouts already).
 */
export function joinCache(
  g: OnnxGraph,
  hostCache: boolean,
  k: string,
  v: string,
  keptK: string,
  keptV: string,
  names: [string, string] | null,
): { kT: string; vT: string; present: [string, string] } {
  if (hostCache) {
    const newK = g.op('Transpose', [k], { perm: [1, 0, 3, 2] }, names?.[0]); // [kvh, 1, hd, q]
    const newV = g.op('Transpose', [v], { perm: [1, 0, 2, 3] }, names?.[1]); // [kvh, 1, q, hd]
    return {
      kT: g.op('Concat', [keptK, newK], { axis: 3 }), // [kvh, 1, hd, cap + q]
      vT: g.op('Concat', [keptV, newV], { axis: 2 }), // [kvh, 1, cap + q, hd]
      present: [newK, newV],
    };
  }
  const presentK = g.op('Concat', [keptK, k], { axis: 2 }, names?.[0]);
  const presentV = g.op('Concat', [keptV, v], { axis: 2 }, names?.[1]);
  return {
    kT: g.op('Transpose', [presentK], { perm: [1, 0, 3, 2] }), // [kvh, 1, hd, total]
    vT: g.op('Transpose', [presentV], { perm: [1, 0, 2, 3] }), // [kvh, 1, total, hd]
    present: [presentK, presentV],
  };
}
