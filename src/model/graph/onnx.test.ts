import { describe, expect, it } from 'vitest';
import { ortForNode } from '../../runtime/ort-node';
import { OnnxGraph } from './onnx';

describe('ONNX writer: If branches', () => {
  it('runs the branch the condition picks; branches read weights and constants of the outer graph', async () => {
    const g = new OnnxGraph('if_test');
    const x = g.input('x', 'float32', [2, 2]);
    const cond = g.input('cond', 'bool', []);
    const w = g.constFloat32([1, 2, 3, 4], [2, 2], 'w');
    const type = [{ dataType: 'float32' as const, shape: [2, 2] }];
    const then = g.branch('then', type, () => [g.op('Add', [g.op('MatMul', [x, w]), x])]);
    const otherwise = g.branch('else', type, () => [g.op('Identity', [x])]);
    g.node('If', [cond], {
      attrs: { then_branch: { graph: then }, else_branch: { graph: otherwise } },
      outputs: ['y'],
    });
    g.output('y', 'float32', [2, 2]);
    const ort = ortForNode();
    const session = await ort.InferenceSession.create(g.toBytes(), { executionProviders: ['wasm'] });
    const input = new ort.Tensor('float32', Float32Array.of(1, 0, 0, 1), [2, 2]);
    const run = async (c: boolean) =>
      Array.from(
        (await session.run({ x: input, cond: new ort.Tensor('bool', Uint8Array.of(c ? 1 : 0), []) })).y
          ?.data as Float32Array,
      );
    expect(await run(true)).toEqual([2, 2, 3, 5]); // x W + x
    expect(await run(false)).toEqual([1, 0, 0, 1]);
    await session.release();
  });
});
