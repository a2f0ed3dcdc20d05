/**
 * The EAGLE-3 head on WebGPU in Node (Dawn; lavapipe here): its KV cache stays on the GPU between calls (fed back as
 * the next call's past, compacted by the graph's keep indices) and gives what the head computes on wasm, call after
 * call, with no upload of onnxruntime's own (every input is ours, in GPU buffers); the benchmark's probe of a head call's cost runs every form and cache place.
 * Medusa heads pick each head's top guesses in the graph there as on wasm.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { eagleHeadCosts } from '../../../bench/head-costs';
import { softmaxTop } from '../../engine/sampling';
import { ortForNode } from '../../runtime/ort-node';
import { countingDawnCalls } from '../../runtime/testing/dawn-calls';
import { nodeWebGpu, webGpuOrt, webGpuTitle } from '../../runtime/testing/node-webgpu';
import { maxDiff } from '../../util/max-diff';
import { randomEagle3, randomMedusa } from '../testing/random-heads';
import { randomModel } from '../testing/random-model';
import { loadHeads } from './load';
import { Eagle3HeadRunner, type Eagle3Input, MedusaHeadsRunner } from './runner';

const target = randomModel();
const cfg = target.model.config;
const d = cfg.hiddenSize;
const rand = (n: number, seed: number) =>
  Float32Array.from({ length: n }, (_, i) => Math.sin(seed * 9301 + i * 49297) * 0.8);
const NEG = -65504;

async function heads() {
  const dir = mkdtempSync(join(tmpdir(), 'spec-heads-'));
  for (const [name, bytes] of Object.entries(randomEagle3(cfg, 30).files)) writeFileSync(join(dir, name), bytes);
  return loadHeads(dir, cfg);
}

/** Three calls as a round trip of the drafter makes them: real rows, two drafted siblings, then (after keeping the
 * real rows and the second sibling) a child of that sibling. Returns every call's logits and outs. */
async function calls(head: Eagle3HeadRunner): Promise<Float32Array[]> {
  const seen: Float32Array[] = [];
  const run = async (input: Eagle3Input) => {
    const { logits, out } = await head.forward(input);
    seen.push(logits, out);
    return out;
  };
  const real = await run({
    tokens: [5, 9, 14],
    inputs: [0, 1, 2].map((i) => ({ feature: rand(3 * d, 10 + i) })),
    positions: [0, 1, 2],
    bias: Float32Array.from({ length: 9 }, (_, k) => (k % 3 <= Math.floor(k / 3) ? 0 : NEG)),
    rows: [2],
  });
  const parent = real.slice(2 * d, 3 * d);
  const siblings = await run({
    tokens: [7, 21],
    inputs: [{ drafted: parent }, { drafted: parent }],
    positions: [3, 3],
    bias: Float32Array.of(0, 0, 0, 0, NEG, 0, 0, 0, NEG, 0),
    rows: [0, 1],
  });
  head.keep([0, 1, 2, 4]); // the real rows and the second sibling
  await run({
    tokens: [11],
    inputs: [{ drafted: siblings.slice(d, 2 * d) }],
    positions: [4],
    bias: Float32Array.of(0, 0, 0, 0, 0),
    rows: [0],
  });
  return seen;
}

describe.skipIf(!nodeWebGpu.ok)(webGpuTitle('the EAGLE-3 head on WebGPU'), () => {
  it('keeps its KV cache on the GPU and computes what it computes on wasm, compaction included', async () => {
    const loaded = await heads();
    const onWasm = await Eagle3HeadRunner.create(ortForNode(), loaded, target.model, 'wasm', 'fp32');
    const expected = await calls(onWasm);
    await onWasm.release();
    for (const cacheOnGpu of [true, false]) {
      const head = await Eagle3HeadRunner.create(
        webGpuOrt(),
        loaded,
        target.model,
        'webgpu',
        'fp32',
        'fused',
        cacheOnGpu,
      );
      const { result: got, counts } = await countingDawnCalls(() => calls(head));
      // Every input is written into a GPU buffer of ours and, with the cache on the GPU, onnxruntime uploads nothing.
      if (cacheOnGpu) expect(counts.upload ?? 0, 'uploads').toBe(0);
      expect(head.cacheLocation).toBe(cacheOnGpu ? 'gpu-buffer' : 'cpu');
      await head.release();
      for (const [i, g] of got.entries())
        expect(maxDiff(g, expected[i] as Float32Array), `output ${i}`).toBeLessThan(1e-4);
    }
  });

  it('measures a head call in each form and cache place', async () => {
    const rows = await eagleHeadCosts(webGpuOrt(), await heads(), target.model, 'webgpu', 'fp32', 1);
    expect(rows.map((r) => `${r.form}/${r.cacheOnGpu}`)).toEqual([
      'fused/true',
      'fused/false',
      'plain/true',
      'plain/false',
    ]);
    for (const r of rows) {
      for (const p of r.fixed) expect(p.ms).toBeGreaterThan(0);
      expect(r.growing).toBeGreaterThan(0);
    }
  });
});

describe.skipIf(!nodeWebGpu.ok)(webGpuTitle('Medusa heads on WebGPU'), () => {
  it("choose each head's top guesses in the graph as on wasm and as the engine's JS would from the logits", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spec-medusa-'));
    for (const [name, bytes] of Object.entries(randomMedusa(cfg, 3, 1).files)) writeFileSync(join(dir, name), bytes);
    const loaded = await loadHeads(dir, cfg);
    const hidden = rand(2 * d, 3);
    const onWasm = await MedusaHeadsRunner.create(ortForNode(), loaded, 'wasm', 'fp32');
    const expected = await onWasm.predictTop(hidden, 6);
    await onWasm.release();
    const heads = await MedusaHeadsRunner.create(webGpuOrt(), loaded, 'webgpu', 'fp32');
    const got = await heads.predictTop(hidden, 6);
    const js = softmaxTop(await heads.predict(hidden), cfg.vocabSize, 6);
    await heads.release();
    expect(Array.from(got.ids)).toEqual(Array.from(expected.ids));
    expect(Array.from(got.ids)).toEqual(Array.from(js.ids));
    expect(maxDiff(got.probs, expected.probs)).toBeLessThan(1e-5);
    expect(maxDiff(got.probs, js.probs)).toBeLessThan(1e-5);
  });
});
