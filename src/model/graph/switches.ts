/**
 * Layer switches, shared by the plain and the fused bodies: every decoder layer but the first and the last gets an
 * If per sub-layer (inputs run_attention.{i} / run_mlp.{i}), so one graph and one copy of the weights serve the
 * target and its layer-skipping self-draft. The "run" branch is the body's own sub-layer, node for node, so a call
 * with every switch on computes exactly what the graph without switches computes; the "skip" branch passes the
 * residual stream through.
 */

import type { GraphContext } from './llama';
import type { Dim, OnnxDataType } from './onnx';

/** Whether layer i sits behind switches. */
export function isSwitched(ctx: GraphContext, i: number): boolean {
  return ctx.layerSwitches && i > 0 && i < ctx.layers - 1;
}

/**
 * Zeros for this call's cache slots: a skipped attention sub-layer still writes them, so every layer's cache keeps
 * the same length; those slots belong to draft tokens and are dropped before verification. [1, kvh, q, hd] each;
 * with hostCache the new rows in their own layouts, [kvh, 1, hd, q] and [kvh, 1, q, hd].
 */
export function zeroCacheSlots(ctx: GraphContext): { k: string; v: string } {
  const { g, cfg, T, inputs } = ctx;
  const q = g.op('Slice', [g.op('Shape', [inputs.positionIds]), g.constInt64([1]), g.constInt64([2])]);
  const zero = { name: 'zero', dataType: T, dims: [1], raw: new Uint8Array(T === 'float16' ? 2 : 4) };
  /** Zeros of the shape whose parts are given: constant dims, or the call's width q. */
  const zeros = (...parts: (string | number[])[]) => {
    const shape = g.op(
      'Concat',
      parts.map((d) => (typeof d === 'string' ? d : g.constInt64(d))),
      { axis: 0 },
    );
    return g.op('ConstantOfShape', [shape], { value: zero });
  };
  const { numKvHeads: kvh, headDim: hd } = cfg;
  if (ctx.hostCache) return { k: zeros([kvh, 1, hd], q), v: zeros([kvh, 1], q, [hd]) };
  const slots = zeros([1, kvh], q, [hd]);
  return { k: slots, v: slots };
}

/**
 * What a skipped attention sub-layer returns for the cache: the kept past and zeros for this call's slots, or with
 * hostCache the zeros alone (the caller keeps the past).
 */
export function skippedCache(
  ctx: GraphContext,
  keptK: string,
  keptV: string,
  zero: { k: string; v: string },
): string[] {
  if (ctx.hostCache) return [ctx.g.op('Identity', [zero.k]), ctx.g.op('Identity', [zero.v])];
  return [ctx.g.op('Concat', [keptK, zero.k], { axis: 2 }), ctx.g.op('Concat', [keptV, zero.v], { axis: 2 })];
}

/**
 * The value types a switch's outputs have: the residual stream [q, H] and the cache's keys and values, [1, kvh,
 * total, hd] each, or with hostCache this call's rows ([kvh, 1, hd, q] and [kvh, 1, q, hd]).
 */
export function switchTypes(ctx: GraphContext): {
  residual: { dataType: OnnxDataType; shape: Dim[] };
  cacheK: { dataType: OnnxDataType; shape: Dim[] };
  cacheV: { dataType: OnnxDataType; shape: Dim[] };
} {
  const { cfg, T } = ctx;
  const { numKvHeads: kvh, headDim: hd } = cfg;
  const present = { dataType: T, shape: [1, kvh, 'total', hd] };
  return {
    residual: { dataType: T, shape: ['q', cfg.hiddenSize] },
    cacheK: ctx.hostCache ? { dataType: T, shape: [kvh, 1, hd, 'q'] } : present,
    cacheV: ctx.hostCache ? { dataType: T, shape: [kvh, 1, 'q', hd] } : present,
  };
}

/**
 * An If on the bool graph input `input`: `run` and `skip` build the branches (same output types, `types`); the If's
 * outputs get `outputs` (names, or a count of fresh ones).
 */
export function switchSubLayer(
  ctx: GraphContext,
  name: string,
  input: string,
  types: { dataType: OnnxDataType; shape: Dim[] }[],
  run: () => string[],
  skip: () => string[],
  outputs: string[] | number,
): string[] {
  const { g } = ctx;
  const runs = g.branch(name, types, run);
  const skips = g.branch(`skip_${name}`, types, skip);
  return g.node('If', [g.input(input, 'bool', [])], {
    attrs: { then_branch: { graph: runs }, else_branch: { graph: skips } },
    outputs,
  });
}
