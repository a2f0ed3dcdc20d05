import { describe, expect, it } from 'vitest';
import type { GenerationResult, RoundEvent } from '../engine/events';
import type { LoadInfo } from '../worker/protocol';
import type { ClientGenerateOptions, ClientLoadOptions, GenerationStream } from './engine-client';
import { type EngineLike, EngineRegistry } from './shared-engines';

const INFO = { device: 'wasm', compute: 'fp32' } as unknown as LoadInfo;
const done = (tokens: number[], stopReason = 'max-tokens'): GenerationResult =>
  ({ tokens, text: '', stopReason, stats: {} }) as unknown as GenerationResult;

/** A client without a worker: loads when told, runs one generation at a time (as EngineClient), ends when told. */
class FakeClient implements EngineLike {
  loads = 0;
  terminated = false;
  info: LoadInfo | null = null;
  /** Every generation asked of it, in order: its prompt, and how to end it. */
  readonly runs: { prompt: unknown; finish(): void }[] = [];
  private running = false;
  private finishLoad: (() => void) | null = null;
  private failLoad: ((e: Error) => void) | null = null;

  load(options: ClientLoadOptions): Promise<LoadInfo> {
    this.loads++;
    return new Promise((resolve, reject) => {
      options.onProgress?.({ status: 'warning', name: 'target', message: 'slow here' });
      this.finishLoad = () => {
        this.info = INFO;
        resolve(INFO);
      };
      this.failLoad = reject;
    });
  }
  loaded(): void {
    this.finishLoad?.();
  }

  generate(prompt: unknown, options: ClientGenerateOptions): GenerationStream {
    if (this.running) throw new Error('a generation is already running on this client');
    this.running = true;
    let settle!: (r: GenerationResult) => void;
    const result = new Promise<GenerationResult>((r) => {
      settle = r;
    });
    const end = (r: GenerationResult) => {
      this.running = false;
      settle(r);
    };
    options.signal?.addEventListener('abort', () => end(done([1], 'cancelled')));
    this.runs.push({ prompt, finish: () => end(done([1, 2, 3])) });
    return {
      result,
      async *[Symbol.asyncIterator](): AsyncGenerator<RoundEvent> {
        yield { round: 0 } as unknown as RoundEvent;
        await result;
      },
    };
  }

  terminate(): void {
    this.terminated = true;
    this.info = null;
    this.failLoad?.(new Error('the engine client was terminated'));
  }
}

const setup = () => {
  const clients: FakeClient[] = [];
  const registry = new EngineRegistry(() => {
    const c = new FakeClient();
    clients.push(c);
    return c;
  });
  return { clients, registry };
};
const tick = () => new Promise((r) => setTimeout(r, 0));

/** Two holders of one loaded engine: A's run under way, B's waiting for it. */
async function twoRuns() {
  const { clients, registry } = setup();
  const a = registry.acquire('k', {});
  const b = registry.acquire('k', {});
  const load = a.load({ target: 't' });
  clients[0]?.loaded();
  await load;
  const ra = a.generate('A', { method: 'ar', maxNewTokens: 3 });
  const rb = b.generate('B', { method: 'ar', maxNewTokens: 3 });
  await tick();
  return { a, client: clients[0] as FakeClient, ra, rb };
}

describe('shared engines', () => {
  it('one engine for one key, loaded once, terminated when the last holder lets go', async () => {
    const { clients, registry } = setup();
    const a = registry.acquire('k', {});
    const b = registry.acquire('k', {});
    const other = registry.acquire('other', {});
    expect(clients).toHaveLength(2);
    const progress: string[] = [];
    const la = a.load({ target: 't' });
    const lb = b.load({ target: 't', onProgress: (p) => progress.push(p.message ?? '') });
    clients[0]?.loaded();
    expect(await la).toBe(INFO);
    expect(await lb).toBe(INFO);
    expect(clients[0]?.loads).toBe(1);
    expect(progress).toEqual(['slow here']); // a late holder hears the warnings given
    expect(a.holders).toBe(2);
    a.release();
    a.release(); // once only
    expect(clients[0]?.terminated).toBe(false);
    expect(b.holders).toBe(1);
    b.release();
    expect(clients[0]?.terminated).toBe(true);
    expect(registry.size).toBe(1); // 'other' only
    other.release();
    expect(registry.size).toBe(0);
    // After the last one let go, the key gets a fresh engine.
    registry.acquire('k', {});
    expect(clients).toHaveLength(3);
  });

  it("a holder letting go mid-load leaves the load to the others; the last one's release stops it", async () => {
    const { clients, registry } = setup();
    const a = registry.acquire('k', {});
    const b = registry.acquire('k', {});
    const la = a.load({ target: 't' });
    const lb = b.load({ target: 't' });
    a.release();
    // The holder that let go learns so at once (the element then says 'load superseded' or 'load stopped'), as when
    // a worker of its own ended; the load goes on for the other.
    await expect(la).rejects.toThrow('this engine lease was released');
    expect(() => a.generate('A', { method: 'ar', maxNewTokens: 3 })).toThrow('this engine lease was released');
    clients[0]?.loaded();
    expect(await lb).toBe(INFO);
    expect(clients[0]?.terminated).toBe(false);
    const c = registry.acquire('k', {});
    const lc = c.load({ target: 't' });
    expect(await lc).toBe(INFO);
    const d = registry.acquire('d', {});
    const ld = d.load({ target: 't' });
    d.release();
    await expect(ld).rejects.toThrow('this engine lease was released');
    expect(clients[1]?.terminated).toBe(true);
    b.release();
    c.release();
    expect(clients[0]?.terminated).toBe(true);
  });

  it('isolated holders get engines of their own; a failed or crashed engine is not handed out again', async () => {
    const { clients, registry } = setup();
    const a = registry.acquire('k', {});
    const own = registry.acquire('k', {}, { isolated: true });
    expect(own.isolated).toBe(true);
    expect(clients).toHaveLength(2);
    registry.acquire('k', {}); // joins a, not own
    expect(clients).toHaveLength(2);
    // Its worker crashed (the client's info gone, no load under way): a new holder gets a fresh engine.
    const la = a.load({ target: 't' });
    clients[0]?.loaded();
    await la;
    (clients[0] as FakeClient).info = null;
    registry.acquire('k', {});
    expect(clients).toHaveLength(3);
  });

  it('joins a loaded engine that serves the caller (loaded with more), never one still loading', async () => {
    const { clients, registry } = setup();
    const a = registry.acquire('with-heads', { heads: true });
    const serves = (m: { heads: boolean }) => m.heads;
    const early = registry.acquire('plain', { heads: false }, { serves });
    expect(clients).toHaveLength(2); // a is still loading
    early.release();
    const la = a.load({ target: 't' });
    clients[0]?.loaded();
    await la;
    const b = registry.acquire('plain', { heads: false }, { serves });
    expect(b.holders).toBe(2);
    expect(b.meta).toEqual({ heads: true });
    expect(clients).toHaveLength(2);
    expect(clients[1]?.terminated).toBe(true);
  });

  it('generations on a shared engine take turns; a cancelled wait ends with nothing made, never touching the run', async () => {
    const { clients, registry } = setup();
    const a = registry.acquire('k', {});
    const b = registry.acquire('k', {});
    const c = registry.acquire('k', {});
    const load = a.load({ target: 't' });
    clients[0]?.loaded();
    await load;
    const client = clients[0] as FakeClient;
    const waits: string[] = [];
    const ra = a.generate('A', { method: 'ar', maxNewTokens: 3 });
    const rb = b.generate('B', { method: 'ar', maxNewTokens: 3, onWait: (w) => waits.push(`B ${w}`) });
    const stopC = new AbortController();
    const rc = c.generate('C', {
      method: 'ar',
      maxNewTokens: 3,
      signal: stopC.signal,
      onWait: (w) => waits.push(`C ${w}`),
    });
    await tick();
    expect(client.runs.map((r) => r.prompt)).toEqual(['A']);
    expect(waits).toEqual(['B true', 'C true']);
    stopC.abort();
    expect(await rc.result).toMatchObject({ tokens: [], stopReason: 'cancelled' });
    client.runs[0]?.finish();
    expect((await ra.result).tokens).toEqual([1, 2, 3]);
    await tick();
    expect(client.runs.map((r) => r.prompt)).toEqual(['A', 'B']);
    expect(waits).toEqual(['B true', 'C true', 'B false']);
    // Its loop left early: the run stops (cancelled), and the engine is free for the next.
    for await (const _ of rb) break;
    expect((await rb.result).stopReason).toBe('cancelled');
    const rd = a.generate('D', { method: 'ar', maxNewTokens: 3 });
    await tick();
    expect(client.runs.map((r) => r.prompt)).toEqual(['A', 'B', 'D']);
    client.runs[2]?.finish();
    expect((await rd.result).stopReason).toBe('max-tokens');
  });

  it('a stream let go before its first round (return() before any next()) leaves the queue as cancelled', async () => {
    const { client, ra, rb } = await twoRuns();
    await rb[Symbol.asyncIterator]().return?.(undefined);
    expect(await rb.result).toMatchObject({ tokens: [], stopReason: 'cancelled' });
    client.runs[0]?.finish();
    expect((await ra.result).tokens).toEqual([1, 2, 3]);
    await tick();
    expect(client.runs.map((r) => r.prompt)).toEqual(['A']);
  });

  it("a run that waited on an engine that stopped meanwhile says so, not 'no models loaded'", async () => {
    const { a, client, ra, rb } = await twoRuns();
    // A's run ends as the worker dies under it (the client forgets its models).
    client.info = null;
    client.runs[0]?.finish();
    await ra.result;
    await expect(rb.result).rejects.toThrow(
      /^the shared engine stopped while this run waited for another element's run/,
    );
    // The engine's turn was handed on: nothing stays locked.
    client.info = INFO;
    const rc = a.generate('C', { method: 'ar', maxNewTokens: 3 });
    await tick();
    expect(client.runs.map((r) => r.prompt)).toEqual(['A', 'C']);
    client.runs[1]?.finish();
    expect((await rc.result).stopReason).toBe('max-tokens');
  });
});
