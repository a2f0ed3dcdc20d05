/**
 * SpecEngine in Node on the bundled models: methods it cannot run are refused clearly, a generation never holds
 * the event loop (timers and abort signals fire during it), and cancelling at random points leaves it usable.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { jsonResult, statsLine } from '../cli/output';
import { ModelRunner } from '../model/runner';
import { randomModel, TINY_CONFIG } from '../model/testing/random-model';
import { ortForNode } from '../runtime/ort-node';
import type { Method } from './drafters/index';
import { SpecEngine } from './engine';
import type { GenerationResult, RoundEvent } from './events';
import { GREEDY, Rng, type SamplingParams } from './sampling';
import { MemoryStore } from './store';

let pair: SpecEngine;
let targetOnly: SpecEngine;
beforeAll(async () => {
  pair = await SpecEngine.load(ortForNode(), {
    target: 'public/models/austen-target',
    draft: 'public/models/austen-draft',
    device: 'wasm',
  });
  targetOnly = await SpecEngine.load(ortForNode(), { target: 'public/models/austen-target', device: 'wasm' });
});
afterAll(async () => {
  await pair?.release();
  await targetOnly?.release();
});

async function finish(
  engine: SpecEngine,
  prompt: string,
  method: Method,
  sampling: SamplingParams,
  maxNewTokens: number,
  signal?: AbortSignal,
): Promise<GenerationResult> {
  const it = engine.generate(prompt, { method, maxNewTokens, sampling, ...(signal ? { signal } : {}) });
  let step = await it.next();
  while (!step.done) step = await it.next();
  return step.value;
}

/** The bundled target (and what `more` adds) on `store`, without calibration or warm-up: what is saved is the runs'. */
function loadOnStore(store: MemoryStore, more: { draft?: string } = {}): Promise<SpecEngine> {
  return SpecEngine.load(ortForNode(), {
    target: 'public/models/austen-target',
    ...more,
    device: 'wasm',
    store,
    calibration: 'never',
    warmup: false,
  });
}

/** A store that lists the keys written to it, in order. */
function recordingStore(): { store: MemoryStore; written: string[] } {
  const written: string[] = [];
  const store = new (class extends MemoryStore {
    override async set(key: string, value: unknown): Promise<void> {
      written.push(key);
      await super.set(key, value);
    }
  })();
  return { store, written };
}

describe('SpecEngine', () => {
  it('lists what it can run, and refuses a method that needs a draft model it was not loaded with', async () => {
    expect(targetOnly.methods().map((m) => m.name)).toEqual(expect.arrayContaining(['ar', 'lookup', 'lookahead']));
    expect(targetOnly.methods().map((m) => m.name)).not.toContain('chain');
    // Every method of the registry runs on the pair, or says why it cannot.
    await expect(finish(targetOnly, 'She was', 'chain', GREEDY, 4)).rejects.toThrow(
      /method "chain" needs a draft model, and this engine was loaded without a draft model \(load one\)/,
    );
    expect((await finish(targetOnly, 'She was', 'lookup', GREEDY, 4)).tokens).toHaveLength(4);
    // A method that is not one (JavaScript passes anything; a missing one read "undefined") names the methods.
    for (const [bad, shown] of [
      ['no-such', '"no-such"'],
      [undefined, 'undefined'],
    ] as const)
      await expect(finish(targetOnly, 'She was', bad as unknown as Method, GREEDY, 4)).rejects.toThrow(
        `unknown method ${shown} (the methods: auto, ar, `,
      );
    expect((await finish(targetOnly, 'She was', 'lookup', GREEDY, 4)).tokens).toHaveLength(4);
  });

  it('two engines on one onnxruntime load and generate at the same time, each as it would alone', async () => {
    // onnxruntime's wasm run holds scratch memory shared by all its sessions across its awaits: overlapping calls
    // failed ("failed to call OrtRun()", "output name cannot be empty") or froze the process.
    const ort = ortForNode();
    const models = {
      target: 'public/models/austen-target',
      draft: 'public/models/austen-draft',
      device: 'wasm',
    } as const;
    const [a, b] = await Promise.all([SpecEngine.load(ort, models), SpecEngine.load(ort, models)]);
    try {
      const together = await Promise.all([
        finish(a, 'It is a truth', 'chain', GREEDY, 24),
        finish(b, 'Emma was', 'chain', GREEDY, 24),
      ]);
      const alone = [await finish(a, 'It is a truth', 'ar', GREEDY, 24), await finish(b, 'Emma was', 'ar', GREEDY, 24)];
      expect(together.map((r) => r.tokens)).toEqual(alone.map((r) => r.tokens));
    } finally {
      await Promise.all([a.release(), b.release()]);
    }
  }, 60_000);

  it('says layer skipping needs three layers where the target has fewer, layer switches or not', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'two-layers-'));
    const config = { ...TINY_CONFIG, vocab_size: 4096 };
    writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
    writeFileSync(join(dir, 'model.safetensors'), randomModel(config).safetensors);
    for (const f of ['tokenizer.json', 'tokenizer_config.json'])
      copyFileSync(join('public/models/austen-target', f), join(dir, f));
    const engine = await SpecEngine.load(ortForNode(), { target: dir, device: 'wasm', layerSwitches: true });
    try {
      await expect(finish(engine, 'She was', 'swift', GREEDY, 4)).rejects.toThrow(
        /method "swift" needs .*a target of 3 layers or more \(this one has 2: its first and last always run\)/,
      );
    } finally {
      await engine.release();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs on draft heads only when loaded with them, and says which heads a method needs', async () => {
    await expect(finish(targetOnly, 'She was', 'eagle', GREEDY, 4)).rejects.toThrow(
      /method "eagle" needs an EAGLE-3 head and the target's hidden states, and this engine was loaded without an EAGLE-3 head \(load one\) or the target's hidden states/,
    );
    const withEagle = await SpecEngine.load(ortForNode(), {
      target: 'public/models/austen-target',
      heads: 'public/models/austen-eagle3',
      device: 'wasm',
    });
    try {
      expect(withEagle.methods().map((m) => m.name)).toContain('eagle');
      expect(withEagle.methods().map((m) => m.name)).not.toContain('medusa');
      await expect(finish(withEagle, 'She was', 'medusa', GREEDY, 4)).rejects.toThrow(
        /loaded without Medusa heads \(public\/models\/austen-eagle3 is an EAGLE-3 head\)/,
      );
      // Still usable after the refusal; the same text as plain decoding.
      const plain = await finish(withEagle, 'She was', 'ar', GREEDY, 12);
      expect((await finish(withEagle, 'She was', 'eagle', GREEDY, 12)).tokens).toEqual(plain.tokens);
      // The heads' cost per call is measured with the rest of the cost model (no estimate left standing in for it),
      // and measured again by an explicit calibration.
      const measured = withEagle.costModel?.headsRelative as number;
      expect(measured).toBeGreaterThan(0.01);
      expect(measured).toBeLessThan(2);
      const again = (await withEagle.calibrate([1, 2], 2)).headsRelative;
      expect(again).toBeGreaterThan(0);
      expect(again).not.toBe(measured);
    } finally {
      await withEagle.release();
    }
    // A heads folder that is not heads (a plain model) is refused, naming the heads.
    await expect(
      SpecEngine.load(ortForNode(), {
        target: 'public/models/austen-target',
        heads: 'public/models/austen-draft',
        device: 'wasm',
      }),
    ).rejects.toThrow(/^heads model public\/models\/austen-draft: /);
    // A device for the draft model or the heads that is not one (the element passes its attribute as it is).
    for (const [option, whose] of [
      ['draftDevice', "the draft model's"],
      ['headsDevice', "the heads'"],
    ])
      await expect(
        SpecEngine.load(ortForNode(), {
          target: 'public/models/austen-target',
          draft: 'public/models/austen-draft',
          device: 'wasm',
          [option as string]: 'gpu',
        }),
      ).rejects.toThrow(`${option} "gpu" (${whose} device) is not one of auto, wasm, webgpu`);
    // Switches that are not true or false, and a calibration that is not one, are refused naming the option (a
    // truthy exact: 1 ran exact decoding's load check without its attention, which then blamed the device).
    for (const [option, value, message] of [
      ['exact', 1, 'exact must be true or false; got 1'],
      ['exact', 'false', 'exact must be true or false; got "false"'],
      ['layerSwitches', 'yes', 'layerSwitches must be true or false; got "yes"'],
      ['warmup', 0, 'warmup must be true or false; got 0'],
      ['calibration', 'bogus', 'calibration "bogus" is not one of auto, never'],
    ] as const)
      await expect(
        SpecEngine.load(ortForNode(), { target: 'public/models/austen-target', device: 'wasm', [option]: value }),
      ).rejects.toThrow(message);
  });

  it('refuses a prompt that is neither text, token ids nor messages in one line, and stays usable', async () => {
    for (const prompt of [null, undefined, 42, new BigInt64Array([10n, 20n]), new DataView(new ArrayBuffer(8))])
      await expect(finish(pair, prompt as never, 'ar', GREEDY, 2)).rejects.toThrow(
        /^the prompt must be text, an array of token ids \(an Array or an integer typed array such as Int32Array\) or \{ messages \}; got (null|undefined|42|a BigInt64Array|a DataView)$/,
      );
    // Messages the chat template could not take are the caller's, not the model's.
    const chat = async (messages: unknown) =>
      finish(pair, { messages } as never, 'ar', GREEDY, 2).then(
        () => 'ran',
        (e: Error) => `${e.constructor.name}: ${e.message}`,
      );
    expect(await chat('hello')).toBe('TypeError: messages must be a non-empty array of { role, content }; got "hello"');
    expect(await chat([])).toBe(
      'TypeError: messages must be a non-empty array of { role, content }; got an empty array',
    );
    expect(await chat([{ content: 'x' }])).toBe(
      'TypeError: message 0 must be { role, content } with text in both; got {"content":"x"}',
    );
    expect(await chat([{ role: 'user', content: 3 }])).toBe(
      'TypeError: message 0 must be { role, content } with text in both; got {"role":"user","content":3}',
    );
    expect((await finish(pair, new Uint16Array([10, 20]) as never, 'ar', GREEDY, 2)).tokens).toHaveLength(2);
    expect((await finish(pair, 'She was', 'ar', GREEDY, 2)).tokens).toHaveLength(2);
  });

  it("a draft model with a shorter context: methods that need it stop there and name it; auto runs to the target's", async () => {
    // The bundled draft model with a 64-token context beside the 1024-token target.
    const dir = mkdtempSync(join(tmpdir(), 'short-draft-'));
    try {
      for (const f of ['model.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'generation_config.json'])
        copyFileSync(join('public/models/austen-draft', f), join(dir, f));
      const config = JSON.parse(readFileSync('public/models/austen-draft/config.json', 'utf8'));
      writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config, max_position_embeddings: 64 }));
      const engine = await SpecEngine.load(ortForNode(), {
        target: 'public/models/austen-target',
        draft: dir,
        device: 'wasm',
        calibration: 'never',
        warmup: false,
      });
      try {
        const ids = (n: number) => Array.from({ length: n }, (_, i) => 300 + ((i * 37) % 500));
        const run = (engine_: SpecEngine, prompt: number[], method: Method, n: number) =>
          finish(engine_, prompt as never, method, GREEDY, n);
        // Too long for the draft model: a method that needs it says so, naming it and what would run.
        await expect(run(engine, ids(80), 'chain', 4)).rejects.toThrow(
          "context limit: the prompt has 80 tokens; the draft model's context is 64 (the target's 1024): shorten the prompt, or use a method that runs without it",
        );
        // auto takes it, on its other arms, and gives plain decoding's tokens.
        const long = await run(engine, ids(80), 'auto', 12);
        expect(long.tokens).toEqual((await run(targetOnly, ids(80), 'ar', 12)).tokens);
        expect(long.stopReason).toBe('max-tokens');
        // A run that outgrows the draft's context on the way: the draft's methods stop at it, auto goes on.
        const chain = await run(engine, ids(40), 'chain', 40);
        expect(chain.stopReason).toBe('context');
        expect(chain.tokens).toHaveLength(64 - 40 + 1);
        // ... and says whose context it was ("stop: context" read as the target's 1024).
        expect(chain.context).toEqual({ limit: 64, of: "the draft model's context" });
        expect(statsLine(chain, 'chain')).toMatch(/stop: context \(the draft model's context, 64 tokens\)$/);
        expect(JSON.parse(jsonResult(chain, [])).stats.context).toEqual(chain.context);
        const auto = await run(engine, ids(40), 'auto', 40);
        expect(auto.stopReason).toBe('max-tokens');
        expect(auto.tokens).toEqual((await run(targetOnly, ids(40), 'ar', 40)).tokens);
        expect(auto.stats.arms?.find((a) => a.name === 'chain')?.rounds ?? 0).toBeGreaterThan(0);
      } finally {
        await engine.release();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('decodes greedily where no sampling is given (a script calling the library without it)', async () => {
    const given = await finish(pair, 'It is a truth', 'adaptive', GREEDY, 12);
    const it = pair.generate('It is a truth', { method: 'adaptive', maxNewTokens: 12 });
    let step = await it.next();
    while (!step.done) step = await it.next();
    expect(step.value.tokens).toEqual(given.tokens);
    // Sampling settings left out take greedy decoding's (top-k 0, top-p 1, seed 0): { temperature } alone samples.
    const partial = await finish(pair, 'It is a truth', 'ar', { temperature: 0.8 } as SamplingParams, 12);
    const full = await finish(pair, 'It is a truth', 'ar', { temperature: 0.8, topK: 0, topP: 1, seed: 0 }, 12);
    expect(partial.tokens).toEqual(full.tokens);
  });

  // int8 rounds every projection's input to 8 bits, so a last-bit difference between a one-token call and a verify
  // call would move a code and a logit by up to 3e-2, and speculation would leave plain decoding at such near-ties:
  // before the attention was made row-invariant (graph/plain-ops.ts), chain left it at token 11 of the first prompt
  // and chain and lookup at token 58 of the second. Per-tensor input quantisation breaks it at token 3.
  it('int8 on wasm: the models run int8, and every speculative method gives plain int8 decoding token for token', async () => {
    const int8 = await SpecEngine.load(ortForNode(), {
      target: 'public/models/austen-target',
      draft: 'public/models/austen-draft',
      device: 'wasm',
      precision: 'int8',
      calibration: 'never',
    });
    try {
      expect(int8.target.precision).toBe('int8');
      for (const prompt of ['"You are very kind," said Anne', 'They walked to the Abbey, then']) {
        const plain = await finish(int8, prompt, 'ar', GREEDY, 64);
        for (const method of ['chain', 'tree', 'lookup', 'merged'] as const) {
          expect((await finish(int8, prompt, method, GREEDY, 64)).tokens, `${method}: ${prompt}`).toEqual(plain.tokens);
        }
      }
    } finally {
      await int8.release();
    }
  });

  it("warms up the reads a round makes: each row's best token and top k, odd widths too, and the heads' hidden states", async () => {
    // On WebGPU a read not warmed compiled its kernels in the first round that made it (SwiftShader: 1.7 s more on the
    // first greedy verification of 17 nodes, after the warm-up and the calibration).
    const argmax = vi.spyOn(ModelRunner.prototype, 'forwardArgmax');
    const topK = vi.spyOn(ModelRunner.prototype, 'forwardTopK');
    const logits = vi.spyOn(ModelRunner.prototype, 'forward');
    try {
      const engine = await SpecEngine.load(ortForNode(), {
        target: 'public/models/austen-target',
        draft: 'public/models/austen-draft',
        heads: 'public/models/austen-eagle3',
        device: 'wasm',
        store: new MemoryStore(),
        calibration: 'never',
      });
      // The draft's tree levels read whole logits rows: warmed so, and never by reads it does not make.
      const draft = engine.draft;
      expect(draft).not.toBeNull();
      expect(
        logits.mock.contexts.some((c, i) => c === draft && (logits.mock.calls[i]?.[0].rows.length ?? 0) >= 8),
      ).toBe(true);
      expect([...argmax.mock.contexts, ...topK.mock.contexts].every((c) => c === engine.target)).toBe(true);
      const wide = argmax.mock.calls.map(([input]) => input).filter((input) => input.rows.length >= 8);
      expect(wide.length).toBeGreaterThan(0);
      for (const input of wide) {
        expect(Array.from(input.rows)).toEqual(Array.from(input.tokens, (_, i) => i));
        expect(Array.from(input.hiddenRows ?? [])).toEqual(Array.from(input.rows));
      }
      expect(topK.mock.calls.some(([input]) => input.rows.length >= 8 && input.rows.length % 2 === 1)).toBe(true);
      expect(argmax.mock.calls.some(([input]) => input.rows.length === 1)).toBe(true);
      await engine.release();
    } finally {
      argmax.mockRestore();
      topK.mockRestore();
      logits.mockRestore();
    }
  });

  it('keeps its measured costs in the store it was given, keyed by the model and device', async () => {
    const store = new MemoryStore();
    const engine = await SpecEngine.load(ortForNode(), {
      target: 'public/models/austen-target',
      device: 'wasm',
      store,
    });
    expect(engine.timings.loadMs).toBeGreaterThan(0);
    expect(engine.timings.warmupMs).toBeGreaterThan(0);
    await finish(engine, 'She was', 'lookup', GREEDY, 2);
    expect(engine.timings.calibration).toBe('measured');
    const record = (await store.get(`costs:${engine.target.fingerprint}:none`)) as { costs: unknown };
    expect(record.costs).toEqual(engine.costModel);
    await engine.release();
  });

  it('never holds the event loop: timers tick during a generation and an abort timer stops it within a round', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 20);
    try {
      const signal = AbortSignal.timeout(300);
      const r = await finish(pair, 'It is a truth universally acknowledged', 'ar', GREEDY, 1000, signal);
      expect(r.stopReason).toBe('cancelled');
      expect(r.tokens.length).toBeLessThan(1000);
      expect(ticks).toBeGreaterThan(0); // none at all while a generation held the event loop
    } finally {
      clearInterval(timer);
    }
  });

  it('saves what a drafter learned however a greedy generation ends: left with break too', async () => {
    const { store, written: keys } = recordingStore();
    const engine = await loadOnStore(store, { draft: 'public/models/austen-draft' });
    try {
      let rounds = 0;
      for await (const _ of engine.generate('It is a truth', {
        method: 'adaptive',
        maxNewTokens: 40,
        sampling: GREEDY,
      }))
        if (++rounds === 3) break;
      expect(keys.filter((k) => k.startsWith('learned:adaptive:'))).toHaveLength(1);
    } finally {
      await engine.release();
    }
  });

  it('remembers what a drafter learned in its store: a new session starts where the last greedy generation ended', async () => {
    const load = (store: MemoryStore) => loadOnStore(store, { draft: 'public/models/austen-draft' });
    const trees = async (engine: SpecEngine, prompt: string, sampling: SamplingParams, maxNewTokens = 24) => {
      const it = engine.generate(prompt, { method: 'adaptive-tree', maxNewTokens, sampling });
      const out: string[] = [];
      for (let step = await it.next(); !step.done; step = await it.next()) out.push(step.value.tree.tokens.join(' '));
      return out;
    };
    const sampled: SamplingParams = { temperature: 0.8, topK: 40, topP: 0.95, seed: 3 };
    const [first, second] = ['It is a truth universally acknowledged', 'Elizabeth walked into the drawing room and'];
    const store = new MemoryStore();
    const engines = [await load(store), await load(store), await load(new MemoryStore()), await load(store)];
    const [one, two, fresh, three] = engines as [SpecEngine, SpecEngine, SpecEngine, SpecEngine];
    try {
      // Long enough that what it learns moves the trees away from the priors (16 tokens were with the draft before it
      // was self-distilled; with the new one its trees then still equalled a fresh engine's).
      await trees(one, first, GREEDY, 32);
      // A second session on the same store drafts the same trees as the first one's next generation.
      const resumed = await trees(two, second, GREEDY);
      const continued = await trees(one, second, GREEDY);
      expect(resumed).toEqual(continued);
      // Without the store it starts from the priors, and drafts otherwise.
      expect(await trees(fresh, second, GREEDY)).not.toEqual(continued);
      // A sampled generation starts from the priors whatever the store holds (a seed reproduces its text).
      expect(await trees(three, second, sampled)).toEqual(await trees(fresh, second, sampled));
    } finally {
      for (const e of engines) await e.release();
    }
  });

  it("keeps auto's estimates when a generation ends, however short: a CLI run exits right after it", async () => {
    const { store, written } = recordingStore();
    const engine = await loadOnStore(store);
    try {
      // Four tokens are at most four rounds, fewer than auto's saves every eight.
      const it = engine.generate('It is a truth universally acknowledged', {
        method: 'auto',
        maxNewTokens: 4,
        sampling: GREEDY,
      });
      for (let step = await it.next(); !step.done; step = await it.next());
      expect(written.filter((k) => k.startsWith('auto:'))).toHaveLength(1);
    } finally {
      await engine.release();
    }
  });

  it('auto on a flat curve runs lookahead decoding on the real target, its window read from the token ids a greedy round fetches, and gives plain greedy decoding', async () => {
    // Calibrate on wasm, then flatten the remembered curve (each width at the one-token time): an engine loaded on
    // that record takes it for a GPU's, where auto has a lookahead arm.
    const keys = new Set<string>();
    const store = new (class extends MemoryStore {
      override async set(key: string, value: unknown): Promise<void> {
        keys.add(key);
        await super.set(key, value);
      }
      // Only the cost record is remembered: a retried load (below) starts auto afresh, not from the arms an earlier
      // attempt measured on another curve.
      override async get(key: string): Promise<unknown> {
        return key.startsWith('costs:') ? super.get(key) : undefined;
      }
    })();
    const load = () =>
      SpecEngine.load(ortForNode(), { target: 'public/models/austen-target', device: 'wasm', store, warmup: false });
    const prompt = 'It is a truth universally acknowledged';
    const first = await load();
    let plain: GenerationResult;
    try {
      plain = await finish(first, prompt, 'ar', GREEDY, 24);
      await finish(first, prompt, 'lookup', GREEDY, 2); // a method on the cost model: the engine calibrates
    } finally {
      await first.release();
    }
    const key = [...keys].find((k) => k.startsWith('costs:')) as string;
    const flatten = async () => {
      const record = (await store.get(key)) as { costs: { curve: { points: { ms: number; relative: number }[] } } };
      const t1 = record.costs.curve.points[0]?.ms as number;
      for (const p of record.costs.curve.points) Object.assign(p, { ms: t1, relative: 1 });
      await store.set(key, record);
    };
    await flatten();
    let result: GenerationResult | null = null;
    for (let attempt = 1; !result; attempt++) {
      const engine = await load();
      try {
        const run = await finish(engine, prompt, 'auto', GREEDY, 24);
        expect(run.tokens).toEqual(plain.tokens);
        if (engine.timings.calibration === 'remembered') result = run;
      } finally {
        await engine.release();
      }
      if (result) break;
      // The load's spot check found one token's time moved 1.5x or more from the record (a loaded machine: CI runs
      // test files side by side) and measured a fresh curve, wasm's steep one. Flatten that one and load again.
      if (attempt === 5) throw new Error('the flattened record was never used: every spot check measured afresh');
      await flatten();
    }
    expect(result.stats.arms?.find((a) => a.name === 'lookahead')?.rounds ?? 0).toBeGreaterThan(0);
  });

  it('auto under sampling gives a seed the same text whatever ran on the engine before', async () => {
    const sampled: SamplingParams = { temperature: 0.9, topK: 40, topP: 0.95, seed: 7 };
    const first = (await finish(pair, 'She was', 'auto', sampled, 30)).tokens;
    for (const before of [sampled, GREEDY, sampled]) {
      await finish(pair, 'It is a truth universally acknowledged', 'auto', before, 40);
      expect((await finish(pair, 'She was', 'auto', sampled, 30)).tokens).toEqual(first);
    }
  }, 60_000);

  it('cancel() frees an engine whose iterator was dropped part-way, and stops one in flight, with what they made', async () => {
    const dropped = pair.generate('She was', { method: 'chain', maxNewTokens: 40 });
    const first = await dropped.next();
    expect(first.done).toBe(false);
    // The dropped iterator still holds the engine.
    await expect(finish(pair, 'She was', 'ar', GREEDY, 4)).rejects.toThrow(/call cancel\(\)/);
    const made = await pair.cancel();
    expect(made?.stopReason).toBe('cancelled');
    expect(made?.tokens.length).toBe((first.value as RoundEvent).counts.tokens);
    // The iterator's own next() after it still reads the result (a native generator's would read undefined).
    expect(await dropped.next()).toEqual({ done: true, value: made });
    // Still an async generator underneath (its name, and where the runtime has it, `await using`'s asyncDispose).
    expect(Object.prototype.toString.call(dropped)).toBe('[object AsyncGenerator]');
    expect(await dropped.return(undefined as never)).toEqual({ done: true, value: made });
    const reference = (await finish(pair, 'She was', 'chain', GREEDY, 40)).tokens;
    expect(reference.slice(0, made?.tokens.length)).toEqual(made?.tokens);
    // In flight: the pending round completes (its event goes to the loop), then the generation ends.
    const running = pair.generate('She was', { method: 'chain', maxNewTokens: 40 });
    await running.next();
    const pending = running.next();
    await new Promise((resolve) => setTimeout(resolve, 1)); // the round under way (past the pause between rounds)
    const stopped = await pair.cancel();
    const round = await pending;
    if (round.done) {
      // The loop's next() found the stop first (the round had not begun): it got the result, and cancel() the same.
      expect(round.value.stopReason).toBe('cancelled');
      expect(stopped).toEqual(round.value);
    } else {
      expect(stopped?.tokens.length).toBe(round.value.counts.tokens);
      expect(await running.next()).toEqual({ done: true, value: stopped });
    }
    expect((await finish(pair, 'She was', 'chain', GREEDY, 40)).tokens).toEqual(reference);
    expect(await pair.cancel()).toBeNull(); // nothing running: nothing to do
    // A generate() right after a cancel() not awaited waits for it, instead of finding the engine busy.
    const again = pair.generate('She was', { method: 'chain', maxNewTokens: 40 });
    await again.next();
    void pair.cancel();
    expect((await finish(pair, 'She was', 'ar', GREEDY, 4)).tokens).toEqual(reference.slice(0, 4));
  }, 60_000);

  it('an aborted signal stops a generation before anything runs, not even the prompt', async () => {
    const r = await finish(pair, 'She was', 'chain', GREEDY, 40, AbortSignal.abort());
    expect(r.stopReason).toBe('cancelled');
    expect(r.tokens).toEqual([]);
    expect(r.stats.targetCalls).toBe(0);
  });

  it('cancelled at 50 random points, it stays usable and the next run equals an uncancelled run', async () => {
    const prompt = 'Anne recollected with pleasure the next morning her promise';
    const sampled: SamplingParams = { temperature: 0.8, topK: 40, topP: 0.95, seed: 7 };
    const reference = new Map<string, number[]>();
    const rng = new Rng(2024);
    for (let i = 0; i < 50; i++) {
      const runnable = pair.methods();
      const spec = runnable[Math.floor(rng.next() * runnable.length)] as (typeof runnable)[number];
      const method = spec.name;
      // Methods that keep learning across generations reproduce their text only under greedy decoding.
      const sampling = rng.next() < 0.5 || spec.learns ? GREEDY : sampled;
      const key = `${method}/${sampling.temperature}`;
      if (!reference.has(key)) reference.set(key, (await finish(pair, prompt, method, sampling, 16)).tokens);
      const controller = new AbortController();
      setTimeout(() => controller.abort(), Math.floor(rng.next() * 40));
      const cut = await finish(pair, prompt, method, sampling, 400, controller.signal);
      expect(['cancelled', 'max-tokens', 'eos', 'context']).toContain(cut.stopReason);
      expect((await finish(pair, prompt, method, sampling, 16)).tokens, `${key} after cancel ${i}`).toEqual(
        reference.get(key),
      );
    }
  }, 180_000);
});
