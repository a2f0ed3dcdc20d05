/**
 * The harness on the bundled pair, tiny: plain decoding is always the baseline (speedups and "= plain greedy" are
 * never reported without it), and per-category cells are the same summary over a subset.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpecEngine } from '../src/engine/engine';
import { ortForNode } from '../src/runtime/ort-node';
import { runBench } from './harness';

let engine: SpecEngine;
beforeAll(async () => {
  engine = await SpecEngine.load(ortForNode(), {
    target: 'public/models/austen-target',
    draft: 'public/models/austen-draft',
    device: 'wasm',
  });
});
afterAll(async () => {
  await engine?.release();
});

describe('benchmark harness', () => {
  it('runs plain decoding as the baseline even when not asked, and breaks results down by category', async () => {
    const report = await runBench(engine, {
      prompts: [
        { kind: 'x', text: 'It is a truth universally acknowledged' },
        { kind: 'y', text: 'She was' },
      ],
      methods: ['chain'],
      maxNewTokens: 6,
      repeats: 1,
      curveQs: [1, 2],
      curveReps: 1,
    });
    expect(report.cells.map((c) => c.method)).toEqual(['ar', 'chain']);
    const chain = report.cells[1];
    expect(Number.isFinite(chain?.speedup.median)).toBe(true);
    expect(chain?.matchesPlain).toBe(true);
    expect(Object.keys(report.categories)).toEqual(['x', 'y']);
    expect(report.categories.x?.[1]?.runs).toBe(1);
    expect(report.categories.x?.[0]?.speedup.median).toBe(1);
  });
});
