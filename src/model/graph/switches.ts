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
 * Zeros for this call's cache slots [1, kvh, q, hd]: a skipped attention sub-layer still writes them, so every
 * layer's cache keeps the same length; those slots belong to draft tokens and are dropped before verification.
 */
export function zeroCacheSlots(ctx: GraphContext): string {
  const { g, cfg, T, inputs } = ctx;
  const q = g.op('Slice', [g.op('Shape', [inputs.positionIds]), g.constInt64([1]), g.constInt64([2])]);
  const shape = g.op('Concat', [g.constInt64([1, cfg.numKvHeads]), q, g.constInt64([cfg.headDim])], { axis: 0 });
  const zero = { name: 'zero', dataType: T, dims: [1], raw: new Uint8Array(T === 'float16' ? 2 : 4) };
  return g.op('ConstantOfShape', [shape], { value: zero });
}

/** The value types a switch's outputs have: the residual stream [q, H] and the cache [1, kvh, total, hd]. */
export function switchTypes(ctx: GraphContext): {
  residual: { dataType: OnnxDataType; shape: Dim[] };
  cache: { dataType: OnnxDataType; shape: Dim[] };
} {
  const { cfg, T } = ctx;
  return {
    residual: { dataType: T, shape: ['q', cfg.hiddenSize] },
    cache: { dataType: T, shape: [1, cfg.numKvHeads, 'total', cfg.headDim] },
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
