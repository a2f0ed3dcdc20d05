/**
 * Remembered costs, on a model whose calls cost simulated time (a fake clock): reused while they hold, measured again
 * when single-token calls no longer cost what the record says, or when the record is for another model or too old.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { chooseBudget } from './budget';
import { measureCurve } from './calibrate';
import { calibrateCosts } from './costs';
import type { ForwardInput } from './lm';
import { MemoryStore } from './store';
import { hashedLogits, ToyLM } from './testing/toy-lm';

let clock = 0;
afterEach(() => {
  vi.restoreAllMocks();
});

/** A toy model whose call over q tokens takes `perToken * (1 + q / 8)` simulated milliseconds. */
class TimedLM extends ToyLM {
  constructor(
    public perToken: number,
    readonly fingerprint = 'toy-timed',
  ) {
    super(20, hashedLogits(20, 1));
  }
  /** Calls still to run three times slower (a fresh process whose compiled code has not settled yet). */
  slow = 0;
  override async forward(input: ForwardInput): Promise<Float32Array> {
    clock += this.perToken * (1 + input.tokens.length / 8) * (this.slow-- > 0 ? 3 : 1);
    return super.forward(input);
  }
}

const request = (target: TimedLM, store: MemoryStore) => ({
  target,
  draft: null,
  tokens: Array.from({ length: 80 }, (_, i) => i % 20),
  qs: [1, 2, 4, 8],
  reps: 2,
  warmRounds: 1,
  store,
});

describe('remembered costs', () => {
  it('are reused while a spot check holds, and measured again when it does not', async () => {
    vi.spyOn(performance, 'now').mockImplementation(() => clock);
    const store = new MemoryStore();
    const lm = new TimedLM(1);
    const first = await calibrateCosts(request(lm, store));
    expect(first.source).toBe('measured');
    expect(first.costs.curve.points.map((p) => p.relative)).toEqual([1, 10 / 9, 12 / 9, 16 / 9]);
    const again = await calibrateCosts(request(lm, store));
    expect(again.source).toBe('remembered');
    expect(again.costs).toEqual(first.costs);
    // A fresh process: its first calls are three times slower while the code settles; still the same machine.
    lm.slow = 5;
    expect((await calibrateCosts(request(lm, store))).source).toBe('remembered');
    lm.perToken = 10; // the same model, ten times slower now: another machine, or a busy one
    expect((await calibrateCosts(request(lm, store))).source).toBe('measured');
    expect((await calibrateCosts(request(new TimedLM(10, 'another-model'), store))).source).toBe('measured');
    expect((await calibrateCosts({ ...request(lm, store), fresh: true })).source).toBe('measured');
  });

  it("are taken without the spot check's calls when a single-token call timed since the load agrees", async () => {
    vi.spyOn(performance, 'now').mockImplementation(() => clock);
    const store = new MemoryStore();
    const lm = new TimedLM(1);
    const first = await calibrateCosts(request(lm, store));
    const t1 = first.costs.curve.points[0]?.ms as number;
    const calls = vi.spyOn(lm, 'forward');
    const agreed = await calibrateCosts({ ...request(lm, store), recentSingleMs: 1.2 * t1 });
    expect(agreed.source).toBe('remembered');
    expect(agreed.costs).toEqual(first.costs);
    expect(calls).not.toHaveBeenCalled();
    // Twice the record (a cold first call, or another machine): the spot check decides, with calls of its own.
    expect((await calibrateCosts({ ...request(lm, store), recentSingleMs: 2 * t1 })).source).toBe('remembered');
    expect(calls).toHaveBeenCalled();
    calls.mockClear();
    lm.perToken = 10;
    expect((await calibrateCosts({ ...request(lm, store), recentSingleMs: 10 * t1 })).source).toBe('measured');
    // An explicit calibrate() measures whatever the warm-up said.
    calls.mockClear();
    expect((await calibrateCosts({ ...request(lm, store), fresh: true, recentSingleMs: 10 * t1 })).source).toBe(
      'measured',
    );
  });

  it('are ignored when too old or malformed', async () => {
    vi.spyOn(performance, 'now').mockImplementation(() => clock);
    const store = new MemoryStore();
    const lm = new TimedLM(1);
    await calibrateCosts(request(lm, store));
    const key = 'costs:toy-timed:none';
    const record = (await store.get(key)) as { savedAt: number };
    await store.set(key, { ...record, savedAt: Date.now() - 40 * 24 * 3600 * 1000 });
    expect((await calibrateCosts(request(lm, store))).source).toBe('measured');
    await store.set(key, { ...record, costs: { curve: 'garbage' } });
    expect((await calibrateCosts(request(lm, store))).source).toBe('measured');
    // A context that is not a whole number of tokens: the spot check threw on it, on every run.
    const saved = (await store.get(key)) as { costs: { curve: object } };
    await store.set(key, { ...saved, costs: { ...saved.costs, curve: { ...saved.costs.curve, context: 1.5 } } });
    expect((await calibrateCosts(request(lm, store))).source).toBe('measured');
  });

  it('time each width as a round calls it, every row read (and refuse records timed on the last row alone)', async () => {
    vi.spyOn(performance, 'now').mockImplementation(() => clock);
    const store = new MemoryStore();
    // A call costs 10 plus 1 per token plus 1 per row read.
    class RowsLM extends TimedLM {
      override async forward(input: ForwardInput): Promise<Float32Array> {
        const q = input.tokens.length;
        clock += 10 + q + Array.from(input.rows).length;
        return ToyLM.prototype.forward.call(this, input);
      }
    }
    const lm = new RowsLM(1, 'toy-rows');
    const measured = await calibrateCosts(request(lm, store));
    expect(measured.costs.curve.points.map((p) => p.ms)).toEqual([12, 14, 18, 26]);
    // A record of the second version (one row read) is measured again.
    const key = 'costs:toy-rows:none';
    await store.set(key, { ...((await store.get(key)) as object), version: 2 });
    expect((await calibrateCosts(request(lm, store))).source).toBe('measured');
    // And one of the third (its curves could fall).
    await store.set(key, { ...((await store.get(key)) as object), version: 3 });
    expect((await calibrateCosts(request(lm, store))).source).toBe('measured');
    expect((await calibrateCosts(request(lm, store))).source).toBe('remembered');
  });

  it("keep the fastest of each width's calls: what else runs on the machine only adds time", async () => {
    vi.spyOn(performance, 'now').mockImplementation(() => clock);
    const store = new MemoryStore();
    // A call costs 10 plus 1 per token and row; a busy spell makes all but the last timed single-token call 8 slower.
    let ones = 0;
    class BusyLM extends TimedLM {
      override async forward(input: ForwardInput): Promise<Float32Array> {
        const q = input.tokens.length;
        const busy = q === 1 && input.positions[0] === 64 && ++ones % 3 !== 0;
        clock += 10 + 2 * q + (busy ? 8 : 0);
        return ToyLM.prototype.forward.call(this, input);
      }
    }
    const measured = await calibrateCosts({ ...request(new BusyLM(1, 'toy-busy'), store), reps: 3, warmRounds: 0 });
    expect(measured.costs.curve.points.map((p) => p.ms)).toEqual([12, 14, 18, 26]);
  });

  it('time the draft as it runs in a round: each call right after a target call (and refuse records timed otherwise)', async () => {
    vi.spyOn(performance, 'now').mockImplementation(() => clock);
    const store = new MemoryStore();
    const target = new TimedLM(10, 'toy-target');
    // A draft call costs 1 (x width) in a loop of its own calls, 2 right after a target call (its weights evicted).
    let targetRan = false;
    const targetForward = target.forward.bind(target);
    target.forward = async (input) => {
      targetRan = true;
      return targetForward(input);
    };
    class Draft extends TimedLM {
      override async forward(input: ForwardInput): Promise<Float32Array> {
        if (targetRan) clock += this.perToken * (1 + input.tokens.length / 8);
        targetRan = false;
        return super.forward(input);
      }
    }
    const draft = new Draft(1, 'toy-draft');
    const measured = await calibrateCosts({ ...request(target, store), draft });
    expect(measured.costs.draftCurve.points.map((p) => p.ms)).toEqual([2.25, 2.5, 3, 4]);
    expect(measured.costs.draftRelative).toBeCloseTo(2.25 / 11.25, 9);
    // A record of the first version (the draft timed alone) is measured again.
    const key = 'costs:toy-target:toy-draft';
    await store.set(key, { ...((await store.get(key)) as object), version: 1 });
    expect((await calibrateCosts({ ...request(target, store), draft })).source).toBe('measured');
    expect((await calibrateCosts({ ...request(target, store), draft })).source).toBe('remembered');
  });
});

describe('the verify-cost curve', () => {
  it('of a model with a short context is measured at the widths its context holds, after a cached token', async () => {
    const lm = new ToyLM(20, hashedLogits(20, 1), { maxPositions: 8 });
    const tokens = Array.from({ length: 80 }, (_, i) => i % 20);
    const curve = await measureCurve(lm, tokens, [1, 2, 4, 8, 16, 32], 1, 64, 1);
    expect(curve.points.map((p) => p.q)).toEqual([1, 2, 4]);
    expect(curve.context).toBe(4);
  });

  it("never falls: a width that measured dearer than a wider one takes the wider one's time", async () => {
    vi.spyOn(performance, 'now').mockImplementation(() => clock);
    // Simulated milliseconds per call width: width 1 slowed (dearer than width 2) and width 4 dearer than width 8, as
    // a busy machine leaves them in a calibration (every repeat alike here, so the fastest cannot undo it).
    const costs: Record<number, number> = { 1: 10, 2: 9.5, 4: 14, 8: 12, 16: 20 };
    class Uneven extends ToyLM {
      override async forward(input: ForwardInput): Promise<Float32Array> {
        clock += costs[input.tokens.length] ?? 1;
        return super.forward(input);
      }
    }
    const lm = new Uneven(20, hashedLogits(20, 1));
    const tokens = Array.from({ length: 80 }, (_, i) => i % 20);
    const curve = await measureCurve(lm, tokens, [1, 2, 4, 8, 16], 2, 64, 1);
    expect(curve.points.map((p) => p.ms)).toEqual([9.5, 9.5, 12, 12, 20]);
    expect(curve.points.map((p) => p.measuredMs)).toEqual([10, undefined, 14, undefined, undefined]);
    expect(curve.points.map((p) => p.relative)).toEqual([1, 1, 12 / 9.5, 12 / 9.5, 20 / 9.5]);
    for (let i = 1; i < curve.points.length; i++)
      expect(curve.points[i]?.relative).toBeGreaterThanOrEqual(curve.points[i - 1]?.relative as number);
    // A node the target never takes is not worth a wider call: with T(2) below T(1) as measured it looked free.
    expect(chooseBudget([0], curve).keep).toBe(0);
  });
});
