/**
 * Inputs written into GPU buffers (gpu-feeds.ts), on WebGPU in Node (Dawn; lavapipe here): a target's calls give
 * the logits they give with every input from the CPU, compaction and growing buffers included, while onnxruntime
 * makes no staging buffer for the inputs fed from the GPU and downloads nothing more; and with them a call uploads
 * nothing at all (no CPU kernel's result goes up to the GPU either: the rotary positions are an input, the rotary
 * tables' row index a constant).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { chainBias } from '../engine/tree';
import { countingDawnCalls } from '../runtime/testing/dawn-calls';
import { nodeWebGpu, webGpuOrt, webGpuTitle } from '../runtime/testing/node-webgpu';
import { maxDiff } from '../util/max-diff';
import { ModelRunner } from './runner';
import { randomModel } from './testing/random-model';

const model = randomModel({ max_position_embeddings: 256 }, 'F32', 3).model;

/** A prompt, a three-token chain, compaction to two of its rows, then a longer chain (the buffers grow). */
async function calls(runner: ModelRunner): Promise<{ logits: Float32Array[]; perCall: Record<string, number>[] }> {
  const logits: Float32Array[] = [];
  const perCall: Record<string, number>[] = [];
  const step = async (tokens: number[]) => {
    const length = runner.length;
    const { result, counts } = await countingDawnCalls(() =>
      runner.forward({
        tokens,
        positions: tokens.map((_, i) => length + i),
        bias: chainBias(length, tokens.length),
        rows: tokens.map((_, i) => i),
      }),
    );
    logits.push(result);
    perCall.push(counts);
  };
  await step([3, 17, 42, 8, 25]);
  await step([9, 14, 2]);
  runner.keep([0, 1, 2, 3, 4, 5, 7]);
  await step(Array.from({ length: 40 }, (_, i) => (i * 7) % 60));
  return { logits, perCall };
}

describe.skipIf(!nodeWebGpu.ok)(webGpuTitle('inputs written into GPU buffers'), () => {
  const G = globalThis as { SPEC_DECODER_GPU_FEEDS?: string };
  afterEach(() => {
    delete process.env.SPEC_DECODER_GPU_FEEDS;
    delete G.SPEC_DECODER_GPU_FEEDS;
  });

  it.each(['plain', 'hybrid'] as const)(
    '%s graph: give the logits CPU inputs give, with no upload at all and no more downloads',
    async (graph) => {
      const runs: Awaited<ReturnType<typeof calls>>[] = [];
      // Off through Node's environment, off through the global a page or worker sets, then on (the default).
      for (const off of [
        () => (process.env.SPEC_DECODER_GPU_FEEDS = '0'),
        () => (G.SPEC_DECODER_GPU_FEEDS = '0'),
        null,
      ]) {
        delete process.env.SPEC_DECODER_GPU_FEEDS;
        delete G.SPEC_DECODER_GPU_FEEDS;
        off?.();
        const runner = await ModelRunner.create(webGpuOrt(), model, { device: 'webgpu', graph });
        runs.push(await calls(runner));
        await runner.release();
      }
      const [cpu, viaGlobal, gpu] = runs as Awaited<ReturnType<typeof calls>>[] as [
        Awaited<ReturnType<typeof calls>>,
        Awaited<ReturnType<typeof calls>>,
        Awaited<ReturnType<typeof calls>>,
      ];
      expect(viaGlobal.perCall.map((c) => c.createBuffer)).toEqual(cpu.perCall.map((c) => c.createBuffer));
      for (const [i, l] of gpu.logits.entries()) expect(maxDiff(l, cpu.logits[i] as Float32Array)).toBeLessThan(1e-5);
      for (const [i, c] of gpu.perCall.entries()) {
        const before = cpu.perCall[i] as Record<string, number>;
        // The token ids, the bias, the keep indices (none in the first call) and the logits rows no longer pass
        // through a staging buffer of their own.
        expect(c.createBuffer ?? 0, `call ${i}`).toBeLessThanOrEqual((before.createBuffer ?? 0) - (i === 0 ? 3 : 4));
        expect(c.mapAsync ?? 0, `call ${i}`).toBe(before.mapAsync ?? 0);
        expect(c.upload ?? 0, `call ${i}: uploads`).toBe(0);
      }
    },
  );
});
