/**
 * Measuring the engine worker from a test, without hooks in the product: the test wraps, inside every worker the
 * page starts, the WebAssembly.Memory constructor (onnxruntime's wasm heap is created by its JS glue on the first
 * session, long after the worker starts) and GPUDevice.createBuffer / GPUBuffer.destroy (live GPU buffers; the
 * wrapper also keeps the device, so a test can destroy it). JS heaps come from the DevTools protocol after a forced
 * garbage collection: the page's through a page session, the worker's through a browser session attached to it.
 */
import type { Browser, CDPSession, Page, Worker } from '@playwright/test';

interface Hooked {
  __sdMemories: WebAssembly.Memory[];
  __sdGpu: { created: number; destroyed: number; device: GPUDevice | null };
}

function install(): boolean {
  const g = globalThis as unknown as Hooked;
  if (g.__sdMemories) return true;
  g.__sdMemories = [];
  g.__sdGpu = { created: 0, destroyed: 0, device: null };
  const Memory = WebAssembly.Memory;
  WebAssembly.Memory = new Proxy(Memory, {
    construct(target, args, newTarget) {
      const memory = Reflect.construct(target, args, newTarget) as WebAssembly.Memory;
      g.__sdMemories.push(memory);
      return memory;
    },
  });
  if (typeof GPUDevice !== 'undefined') {
    const createBuffer = GPUDevice.prototype.createBuffer;
    GPUDevice.prototype.createBuffer = function (this: GPUDevice, descriptor: GPUBufferDescriptor) {
      g.__sdGpu.created++;
      g.__sdGpu.device = this;
      return createBuffer.call(this, descriptor);
    };
    const destroy = GPUBuffer.prototype.destroy;
    GPUBuffer.prototype.destroy = function (this: GPUBuffer) {
      g.__sdGpu.destroyed++;
      return destroy.call(this);
    };
  }
  return true;
}

/** Install the wrappers in every worker the page starts from now on; returns the engine workers seen so far. */
export function hookWorkers(page: Page): Worker[] {
  const engines: Worker[] = [];
  page.on('worker', (worker) => {
    if (!/engine-worker/.test(worker.url())) return;
    engines.push(worker);
    void worker.evaluate(install).catch(() => {});
  });
  return engines;
}

/** The latest engine worker's wasm heap in bytes (its largest WebAssembly.Memory; 0 before the first session). */
export async function wasmBytes(worker: Worker): Promise<number> {
  return worker.evaluate(() => {
    const g = globalThis as unknown as Partial<Hooked>;
    if (!g.__sdMemories) throw new Error('the memory hook was not installed in the engine worker');
    return Math.max(0, ...g.__sdMemories.map((m) => m.buffer.byteLength));
  });
}

/** GPU buffers created and not destroyed since the hook went in. */
export async function liveGpuBuffers(worker: Worker): Promise<number> {
  return worker.evaluate(() => {
    const g = (globalThis as unknown as Hooked).__sdGpu;
    return g.created - g.destroyed;
  });
}

/** Destroy the GPU device the engine worker's buffers were made on (onnxruntime's device). */
export async function destroyGpuDevice(worker: Worker): Promise<void> {
  await worker.evaluate(() => {
    const device = (globalThis as unknown as Hooked).__sdGpu.device;
    if (!device) throw new Error('no GPU device seen in the engine worker');
    device.destroy();
  });
}

/** Bytes of JS heap in use in the page, after a full garbage collection. */
export async function pageHeap(session: CDPSession): Promise<number> {
  await session.send('HeapProfiler.collectGarbage');
  return (await session.send('Runtime.getHeapUsage')).usedSize;
}

/**
 * Bytes of JS heap in use in a worker, after a full garbage collection, through a browser-level DevTools session
 * attached to the worker's target (Playwright gives no CDP session for workers).
 */
export async function workerHeapProbe(browser: Browser, urlPart: RegExp): Promise<() => Promise<number>> {
  const session = await browser.newBrowserCDPSession();
  const { targetInfos } = await session.send('Target.getTargets');
  const target = targetInfos.filter((t) => t.type === 'worker' && urlPart.test(t.url)).at(-1);
  if (!target) throw new Error(`no worker target matching ${urlPart}`);
  const { sessionId } = await session.send('Target.attachToTarget', { targetId: target.targetId, flatten: false });
  let next = 1;
  const waiting = new Map<number, (result: unknown) => void>();
  session.on('Target.receivedMessageFromTarget', (e) => {
    const message = JSON.parse(e.message) as { id?: number; result?: unknown };
    if (message.id !== undefined) waiting.get(message.id)?.(message.result);
  });
  const call = <T>(method: string): Promise<T> =>
    new Promise<T>((resolve) => {
      const id = next++;
      waiting.set(id, (r) => resolve(r as T));
      void session.send('Target.sendMessageToTarget', { sessionId, message: JSON.stringify({ id, method }) });
    });
  return async () => {
    await call('HeapProfiler.collectGarbage');
    return (await call<{ usedSize: number }>('Runtime.getHeapUsage')).usedSize;
  };
}
