/**
 * The wasm thread choice: candidates, the rule, remembering; and the real probe (the bundled target's probe graph in
 * fresh worker_threads workers, each with its own onnxruntime-web on 1 and on 2 threads).
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TestHub } from '../../tests/hub/server';
import { MemoryStore } from '../engine/store';
import {
  chooseThreads,
  describeThreads,
  modelProbeGraphs,
  pickThreads,
  type ThreadTiming,
  threadCandidates,
} from './thread-probe';
import { chooseNodeWasmThreads, runInWorker } from './thread-probe-node';

/** The bundled draft model copied into `folder` with two tokens of its vocabulary swapped (a pair the engine refuses). */
function swapTwoTokens(folder: string): void {
  cpSync('public/models/austen-draft', folder, { recursive: true });
  const tok = JSON.parse(readFileSync(join(folder, 'tokenizer.json'), 'utf8'));
  const vocab = tok.model.vocab as Record<string, number>;
  const [a, b] = Object.keys(vocab).slice(300, 302) as [string, string];
  [vocab[a], vocab[b]] = [vocab[b] as number, vocab[a] as number];
  writeFileSync(join(folder, 'tokenizer.json'), JSON.stringify(tok));
}

const timing = (threads: number, target1: number, target4: number): ThreadTiming => ({
  threads,
  target1,
  target4,
  score: target1 + target4,
});

describe('wasm thread choice', () => {
  it('tries 1, 2, 4, ... up to the cores (at most 8), and the core count itself', () => {
    expect(threadCandidates(1)).toEqual([1]);
    expect(threadCandidates(2)).toEqual([1, 2]);
    expect(threadCandidates(6)).toEqual([1, 2, 4, 6]);
    expect(threadCandidates(64)).toEqual([1, 2, 4, 8]);
  });

  it('takes the least score, the fewer threads unless more are 5% faster, and 1 when nothing ran', () => {
    expect(pickThreads([timing(1, 4, 20), timing(2, 3.5, 12)])).toBe(2);
    expect(pickThreads([timing(1, 4, 20), timing(2, 4, 19.5), timing(4, 4, 19.4)])).toBe(1);
    expect(pickThreads([timing(1, 4, 20), timing(2, 2, 10), timing(4, 2, 9.8)])).toBe(2);
    expect(
      pickThreads([timing(1, 4, 20), { ...timing(2, Number.NaN, Number.NaN), error: 'no SharedArrayBuffer' }]),
    ).toBe(1);
    expect(pickThreads([])).toBe(1);
  });

  it('measures each candidate once, remembers the choice, and keeps a failed candidate as its reason', async () => {
    const store = new MemoryStore();
    const ran: number[] = [];
    const run = async (_g: unknown, threads: number) => {
      ran.push(threads);
      if (threads === 4) throw new Error('worker failed\nstack');
      return timing(threads, 5 / threads, 20 / threads);
    };
    const graph = async () => ({}) as never;
    const first = await chooseThreads('k', 4, graph, run, store);
    expect(first).toMatchObject({ threads: 2, how: 'measured', cores: 4 });
    expect(first.timings[2]).toMatchObject({ threads: 4, error: 'worker failed' });
    expect(describeThreads(first)).toMatch(
      /^2 wasm threads \(measured in .* s; target T\(1\) \+ T\(4\), ms, with 1: 5\.00 \+ 20\.00 = 25\.00, 2: 2\.50 \+ 10\.00 = 12\.50, 4: worker failed\)$/,
    );
    const again = await chooseThreads('k', 4, graph, run, store);
    expect(again).toMatchObject({ threads: 2, how: 'remembered' });
    expect(ran).toEqual([1, 2, 4]);
    // A count this machine would not measure (an edited record, a store from a larger machine) is measured again.
    await store.set('k', { ...((await store.get('k')) as object), threads: 64 });
    expect(await chooseThreads('k', 4, graph, run, store)).toMatchObject({ threads: 2, how: 'measured' });
    expect(await chooseThreads('k', 1, graph, run, store)).toMatchObject({ threads: 1, how: 'one core' });
    // A measurement where nothing ran is not remembered.
    const failing = async () => {
      throw new Error('no wasm');
    };
    expect(await chooseThreads('f', 2, graph, failing, store)).toMatchObject({ threads: 1, how: 'measured' });
    expect(await store.get('f')).toBeUndefined();
    // Nor one whose models did not load: nothing was measured, and it does not say it was.
    const unloadable = async () => {
      throw new Error('config.json not found');
    };
    const none = await chooseThreads('u', 2, unloadable, run, store);
    expect(none).toMatchObject({ threads: 1, how: 'not loaded', timings: [] });
    expect(describeThreads(none)).toBe('1 wasm thread (not loaded)');
    // A page that is not cross-origin isolated runs one thread whatever it asks: said, with the count asked.
    const notIsolated = { threads: 1, how: 'not isolated' as const, cores: 8, timings: [], ms: 0, asked: 4 };
    expect(describeThreads(notIsolated)).toBe('1 wasm thread (not isolated; 4 asked)');
    expect(await store.get('u')).toBeUndefined();
  });

  it('the real probe: each count in its own worker, target and draft calls timed, the score their round', async () => {
    const graphs = await modelProbeGraphs('public/models/austen-target', 'public/models/austen-draft');
    for (const threads of [1, 2]) {
      const t = await runInWorker(graphs, threads);
      expect(t.threads).toBe(threads);
      expect(t.target1).toBeGreaterThan(0);
      // Not compared with target1: a 4-token call can take no longer than a 1-token one (it failed in a CI run).
      expect(t.target4).toBeGreaterThan(0);
      // The 1-layer draft's call is cheaper than the 12-layer target's.
      expect(t.draft1).toBeLessThan(t.target1);
      expect(t.score).toBeCloseTo(t.target1 + t.target4 + 2 * (t.draft1 as number), 2);
    }
    const alone = await runInWorker({ target: graphs.target }, 1);
    expect(alone.draft1).toBeUndefined();
    await expect(runInWorker(graphs, 1, 'file:///nonexistent/ort.mjs')).rejects.toThrow(/nonexistent/);
  }, 60_000);

  it('chooses for a machine and target once, then remembers it', async () => {
    const store = new MemoryStore();
    const models = { target: 'public/models/austen-target', draft: 'public/models/austen-draft' };
    const first = await chooseNodeWasmThreads({ ...models, store, cores: 2 });
    expect(first.how).toBe('measured');
    expect(first.timings.map((t) => t.threads)).toEqual([1, 2]);
    expect(first.timings.every((t) => !t.error)).toBe(true);
    expect([1, 2]).toContain(first.threads);
    const again = await chooseNodeWasmThreads({ ...models, store, cores: 2 });
    expect(again).toMatchObject({ threads: first.threads, how: 'remembered' });
  }, 60_000);

  it('reports the files it downloads: a hub target is loaded here first, so the engine finds it cached', async () => {
    const hub = await TestHub.start();
    hub.addRepo('test/austen-target', 'public/models/austen-target');
    const home = mkdtempSync(join(tmpdir(), 'probe-hub-'));
    const draft = mkdtempSync(join(tmpdir(), 'probe-draft-'));
    const saved = { ...process.env };
    try {
      delete process.env.HF_HUB_CACHE;
      Object.assign(process.env, { HF_ENDPOINT: hub.url, HF_HOME: home });
      // A draft the engine would refuse ends the probe before it times anything (next test): only the loads run.
      swapTwoTokens(draft);
      const downloaded: string[] = [];
      const choice = await chooseNodeWasmThreads({
        target: 'hf:test/austen-target',
        draft,
        store: new MemoryStore(),
        cores: 2,
        onProgress: (p) => {
          if (p.status === 'download') downloaded.push(`${p.name}: ${p.file}`);
        },
      });
      expect(choice.how).toBe('not loaded');
      expect(downloaded).toContain('hf:test/austen-target: config.json');
      expect(downloaded).toContain('hf:test/austen-target: model.safetensors');
    } finally {
      for (const k of ['HF_ENDPOINT', 'HF_HOME']) delete process.env[k];
      Object.assign(process.env, saved);
      hub.close();
      rmSync(draft, { recursive: true, force: true });
      rmSync(home, { recursive: true, force: true });
    }
  }, 60_000);

  it('does not time a draft whose vocabulary differs from the target (the engine refuses that pair)', async () => {
    const draft = mkdtempSync(join(tmpdir(), 'probe-draft-'));
    try {
      swapTwoTokens(draft);
      const store = new MemoryStore();
      const choice = await chooseNodeWasmThreads({ target: 'public/models/austen-target', draft, store, cores: 2 });
      expect(choice).toMatchObject({ threads: 1, how: 'not loaded', timings: [] });
    } finally {
      rmSync(draft, { recursive: true, force: true });
    }
  }, 60_000);
});
