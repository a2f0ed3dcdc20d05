import { afterEach, describe, expect, it, vi } from 'vitest';

/** A fresh copy of the module with setImmediate hidden, as in a browser or a worker: the MessageChannel path. */
async function withoutSetImmediate() {
  vi.stubGlobal('setImmediate', undefined);
  let made = 0;
  class Counting extends MessageChannel {
    constructor() {
      super();
      made++;
    }
  }
  vi.stubGlobal('MessageChannel', Counting);
  vi.resetModules();
  const { nextMacrotask } = await import('./macrotask');
  return { nextMacrotask, made: () => made };
}

afterEach(() => {
  vi.unstubAllGlobals();
});

/** A call resolves only after the microtasks queued behind it have run: it goes through the event loop. */
async function leavesTheMicrotaskQueue(nextMacrotask: () => Promise<void>): Promise<void> {
  let resolved = false;
  const done = nextMacrotask().then(() => {
    resolved = true;
  });
  for (let i = 0; i < 10; i++) await Promise.resolve();
  expect(resolved).toBe(false);
  await done;
  expect(resolved).toBe(true);
}

describe('nextMacrotask', () => {
  it('leaves the microtask queue (Node: setImmediate)', async () => {
    const { nextMacrotask } = await import('./macrotask');
    await leavesTheMicrotaskQueue(nextMacrotask);
  });

  it('without setImmediate goes through one MessageChannel, made once and kept, resolving calls in order', async () => {
    const { nextMacrotask, made } = await withoutSetImmediate();
    await leavesTheMicrotaskQueue(nextMacrotask);
    const order: number[] = [];
    await Promise.all([0, 1, 2, 3, 4].map((i) => nextMacrotask().then(() => order.push(i))));
    for (let i = 0; i < 20; i++) await nextMacrotask();
    expect(order).toEqual([0, 1, 2, 3, 4]);
    expect(made()).toBe(1);
  });
});
