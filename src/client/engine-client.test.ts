import { describe, expect, it } from 'vitest';
import type { FromWorker, ToWorker } from '../worker/protocol';
import { EngineClient } from './engine-client';

/**
 * A worker in the same process: clones what it is sent (as postMessage does, so what cannot cross a worker boundary
 * throws here too), logs each request, and answers a load after 10 ms and a generation after 30 ms. It says which
 * load a generation ran on.
 */
class FakeWorker {
  onmessage: ((event: MessageEvent<FromWorker>) => void) | null = null;
  onerror: unknown = null;
  onmessageerror: unknown = null;
  readonly log: string[] = [];
  private model = 'none';
  terminated = false;
  /** The wasm folder its onnxruntime was set up from (its first load's). */
  private ortBase: string | undefined;

  postMessage(msg: ToWorker): void {
    structuredClone(msg);
    const reply = (data: unknown, ms: number) =>
      setTimeout(() => this.onmessage?.({ data } as MessageEvent<FromWorker>), ms);
    if (msg.type === 'load') {
      this.log.push(`load ${msg.request.target}`);
      // As the worker: options checked first, then a load it cannot make here handed back.
      if (msg.request.precision !== ('fp64' as never)) {
        const base = msg.request.ortBase;
        if ((this.model !== 'none' && msg.request.device === 'webgpu') || (this.ortBase && this.ortBase !== base)) {
          reply({ type: 'restart', id: msg.id }, 1);
          return;
        }
        this.ortBase ??= base;
      }
      if (msg.request.precision === ('fp64' as never)) {
        // As the worker refuses a bad option: before it lets go of the engine it holds.
        const error = { name: 'RangeError', message: 'precision "fp64" is not one of …', kept: this.model !== 'none' };
        reply({ type: 'error', id: msg.id, error }, 1);
        return;
      }
      const target = msg.request.target;
      setTimeout(() => {
        this.model = target;
      }, 10);
      reply({ type: 'loaded', id: msg.id, info: { device: 'wasm', compute: 'fp32', target: {} } }, 10);
    } else if (msg.type === 'generate') {
      this.log.push(`generate on ${this.model}`);
      const text = `from ${this.model}`;
      reply({ type: 'done', id: msg.id, result: { tokens: [1], text, stopReason: 'max-tokens', stats: {} } }, 30);
    }
  }
  terminate(): void {
    this.terminated = true;
  }
}

const LOAD = { base: 'http://localhost/', device: 'wasm' } as const;
const settledWithin = <T>(p: Promise<T>, ms = 1000) =>
  Promise.race([
    p.then(
      () => 'resolved',
      (e: Error) => `rejected: ${e.message}`,
    ),
    new Promise<string>((r) => setTimeout(() => r('still pending'), ms)),
  ]);

/** A client, and every worker it has made, in order. */
function clientOfWorkers(): { client: EngineClient; workers: FakeWorker[] } {
  const workers: FakeWorker[] = [];
  const client = new EngineClient(() => {
    const w = new FakeWorker();
    workers.push(w);
    return w as unknown as Worker;
  });
  return { client, workers };
}

describe('EngineClient', () => {
  it('a generate() right after a load() not awaited runs on what that load loads, after it', async () => {
    const worker = new FakeWorker();
    const client = new EngineClient(() => worker as unknown as Worker);
    await client.load({ ...LOAD, target: 'first/' });
    const next = client.load({ ...LOAD, target: 'second/' });
    const run = client.generate('hi', { method: 'ar', maxNewTokens: 4 });
    expect((await run.result).text).toBe('from second/');
    await next;
    // The first generation ever, right after the first load() (not awaited), waits for it too.
    const fresh = new EngineClient(() => new FakeWorker() as unknown as Worker);
    const loading = fresh.load({ ...LOAD, target: 'only/' });
    expect((await fresh.generate('hi', { method: 'ar', maxNewTokens: 4 }).result).text).toBe('from only/');
    await loading;
    expect(worker.log).toEqual(['load first/', 'load second/', 'generate on second/']);
  });

  it('a hand-back whose fresh worker cannot start rejects the load in one line; the client is not left waiting', async () => {
    let made = 0;
    const client = new EngineClient(() => {
      if (made++ > 0) throw new Error('no workers here');
      return new FakeWorker() as unknown as Worker;
    });
    await client.load({ ...LOAD, device: 'webgpu', target: 'm/' });
    expect(await settledWithin(client.load({ ...LOAD, device: 'webgpu', target: 'n/' }))).toBe(
      'rejected: load: the request could not be sent to the engine worker (Error: no workers here)',
    );
    // Not stuck behind it: the next call is answered (refused: no models, and no worker to make).
    expect(await settledWithin(client.generate('hi', { method: 'ar', maxNewTokens: 4 }).result)).toMatch(/^rejected: /);
  });

  it('a request that cannot reach the worker fails in one line and leaves the client usable', async () => {
    const worker = new FakeWorker();
    const client = new EngineClient(() => worker as unknown as Worker);
    await client.load({ ...LOAD, target: 'm/' });
    // What a reactive framework hands over: a proxy, which structured cloning refuses.
    const messages = new Proxy([{ role: 'user' as const, content: 'hi' }], {});
    const run = client.generate({ messages }, { method: 'ar', maxNewTokens: 4 });
    expect(await settledWithin(run.result)).toMatch(
      /^rejected: generate: the request could not be sent to the engine worker \(DataCloneError: .*\); pass plain data/,
    );
    expect(await settledWithin(client.generate('hi', { method: 'ar', maxNewTokens: 4 }).result)).toBe('resolved');
    // A load that cannot be sent leaves the models loaded before in use.
    const unsendable = client.load({ ...LOAD, target: 'n/', onProgress: undefined, hub: (() => 0) as never });
    expect(await settledWithin(unsendable)).toMatch(
      /^rejected: load: the request could not be sent to the engine worker/,
    );
    expect((await client.generate('hi', { method: 'ar', maxNewTokens: 4 }).result).text).toBe('from m/');
    expect(await settledWithin(client.load({ ...LOAD, target: 'n/' }))).toBe('resolved');
  });

  it('a load the worker refuses before letting go of its engine leaves the models loaded before in use', async () => {
    const worker = new FakeWorker();
    const client = new EngineClient(() => worker as unknown as Worker);
    await client.load({ ...LOAD, target: 'm/' });
    const refused = client.load({ ...LOAD, target: 'x/', precision: 'fp64' as never });
    expect(await settledWithin(refused)).toMatch(/^rejected: precision "fp64" is not one of/);
    expect(client.info).not.toBeNull();
    expect((await client.generate('hi', { method: 'ar', maxNewTokens: 4 }).result).text).toBe('from m/');
  });

  it('a load a worker hands back (it ran on WebGPU) goes to a fresh worker, and the client goes on there', async () => {
    const { client, workers } = clientOfWorkers();
    await client.load({ ...LOAD, device: 'webgpu', target: 'm/' });
    expect(await settledWithin(client.load({ ...LOAD, device: 'webgpu', target: 'n/' }))).toBe('resolved');
    expect(workers.map((w) => [w.log, w.terminated])).toEqual([
      [['load m/', 'load n/'], true],
      [['load n/'], false],
    ]);
    expect((await client.generate('hi', { method: 'ar', maxNewTokens: 4 }).result).text).toBe('from n/');
  });

  it("another wasm folder for onnxruntime gets a fresh worker (onnxruntime is set up once, from a worker's first load)", async () => {
    const { client, workers } = clientOfWorkers();
    await client.load({ ...LOAD, target: 'm/', ortBase: 'http://localhost/wrong/' });
    await client.load({ ...LOAD, target: 'm/', ortBase: 'http://localhost/wrong/' });
    expect(workers).toHaveLength(1);
    // Refused for a bad option before it is handed back: the models loaded before stay, in the same worker.
    const refused = client.load({
      ...LOAD,
      target: 'x/',
      ortBase: 'http://localhost/ort/',
      precision: 'fp64' as never,
    });
    expect(await settledWithin(refused)).toMatch(/^rejected: precision "fp64"/);
    expect(workers).toHaveLength(1);
    expect((await client.generate('hi', { method: 'ar', maxNewTokens: 4 }).result).text).toBe('from m/');
    await client.load({ ...LOAD, target: 'n/', ortBase: 'http://localhost/ort/' });
    expect(workers).toHaveLength(2);
    expect((await client.generate('hi', { method: 'ar', maxNewTokens: 4 }).result).text).toBe('from n/');
  });
});
