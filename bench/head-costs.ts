/**
 * What one call of the EAGLE-3 head costs on this device, apart from the rounds that use it: each graph form (fused
 * contrib ops, plain ONNX), with the head's KV cache kept on the GPU or carried through the CPU, at a few widths over
 * a fixed 64-row cache (the same shapes again and again), and over a growing cache (a new length every call, as in
 * decoding: shows what shape-keyed work, such as pipeline compilation, costs). Random inputs: a call's cost does not
 * depend on its values.
 */
import type * as OrtModule from 'onnxruntime-common';
import type { Eagle3Form } from '../src/model/graph/heads';
import type { LoadedHeads } from '../src/model/heads/load';
import { Eagle3HeadRunner } from '../src/model/heads/runner';
import type { LoadedModel } from '../src/model/load';
import type { Device } from '../src/model/precision';
import { median } from '../src/util/median';

type Ort = Pick<typeof OrtModule, 'InferenceSession' | 'Tensor'>;

export interface HeadCostRow {
  form: Eagle3Form;
  cacheOnGpu: boolean;
  /** Median ms per call of q rows over a 64-row cache. */
  fixed: { q: number; ms: number }[];
  /** Median ms per call of 4 rows over a cache growing by 4 rows a call from 64. */
  growing: number;
}

export const HEAD_COST_QS = [1, 4, 8, 16];
const CACHE = 64;

export async function eagleHeadCosts(
  ort: Ort,
  heads: LoadedHeads,
  target: LoadedModel,
  device: Device,
  compute: 'fp32' | 'fp16',
  reps = 10,
): Promise<HeadCostRow[]> {
  const rows: HeadCostRow[] = [];
  const cacheChoices = device === 'webgpu' ? [true, false] : [false];
  for (const form of ['fused', 'plain'] as const) {
    for (const cacheOnGpu of cacheChoices) {
      const head = await Eagle3HeadRunner.create(ort, heads, target, device, compute, form, cacheOnGpu);
      try {
        const d = head.hiddenSize;
        let seed = 1;
        const random = (n: number) =>
          Float32Array.from({ length: n }, () => {
            seed = (seed * 16807) % 2147483647;
            return seed / 2147483647 - 0.5;
          });
        const prefill = async () => {
          head.reset();
          await head.forward({
            tokens: Array.from({ length: CACHE }, (_, i) => 5 + i),
            inputs: Array.from({ length: CACHE }, () => ({ feature: random(3 * d) })),
            positions: Array.from({ length: CACHE }, (_, i) => i),
            bias: new Float32Array(CACHE * CACHE),
            rows: [CACHE - 1],
          });
        };
        const call = (q: number, cached: number) =>
          head.forward({
            tokens: Array.from({ length: q }, (_, i) => 7 + i),
            inputs: Array.from({ length: q }, () => ({ drafted: random(d) })),
            positions: Array.from({ length: q }, () => cached),
            bias: new Float32Array(q * (cached + q)),
            rows: Array.from({ length: q }, (_, i) => i),
          });
        const fixed = new Map<number, number[]>(HEAD_COST_QS.map((q) => [q, []]));
        for (let rep = 0; rep < reps + 2; rep++) {
          await prefill();
          for (const q of HEAD_COST_QS) {
            head.keep(Array.from({ length: CACHE }, (_, i) => i));
            const t = performance.now();
            await call(q, CACHE);
            if (rep >= 2) fixed.get(q)?.push(performance.now() - t);
          }
        }
        await prefill();
        const growing: number[] = [];
        for (let k = 0; k < reps * 2; k++) {
          const t = performance.now();
          await call(4, head.length);
          growing.push(performance.now() - t);
        }
        rows.push({
          form,
          cacheOnGpu,
          fixed: HEAD_COST_QS.map((q) => ({ q, ms: median(fixed.get(q) ?? []) })),
          growing: median(growing),
        });
      } finally {
        await head.release();
      }
    }
  }
  return rows;
}

export function headCostsMarkdown(rows: readonly HeadCostRow[], targetT1: number): string {
  const f = (n: number) => n.toFixed(2);
  return [
    `EAGLE head call (ms, median; ${CACHE} cached rows; "growing": 4 rows over a cache that grows by 4 every call; target T(1) ${f(targetT1)} ms):`,
    '',
    `| form | KV cache | ${HEAD_COST_QS.map((q) => `q=${q}`).join(' | ')} | growing, q=4 |`,
    `| --- | --- | ${HEAD_COST_QS.map(() => '---').join(' | ')} | --- |`,
    ...rows.map(
      (r) =>
        `| ${r.form} | ${r.cacheOnGpu ? 'GPU' : 'CPU'} | ${r.fixed.map((p) => f(p.ms)).join(' | ')} | ${f(r.growing)} |`,
    ),
  ].join('\n');
}
