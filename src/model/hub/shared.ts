/**
 * Identical concurrent requests share one download. In one JavaScript realm a map of in-flight downloads hands every
 * caller the same promise and the same progress; across realms (two workers, two tabs) a Web Lock per file makes the
 * second wait for the first, then find the file in the shared cache instead of downloading it again.
 */
import type { ByteProgress } from './download';

interface Inflight<T> {
  promise: Promise<T>;
  listeners: Set<ByteProgress>;
  last: [number, number | undefined] | null;
}

const inflight = new Map<string, Inflight<unknown>>();

/** Run `start` once per key while it is in flight; every caller gets its result and its progress. */
export function shareDownload<T>(
  key: string,
  start: (progress: ByteProgress) => Promise<T>,
  onProgress?: ByteProgress,
): Promise<T> {
  let entry = inflight.get(key) as Inflight<T> | undefined;
  if (!entry) {
    const created: Inflight<T> = { promise: Promise.resolve() as Promise<T>, listeners: new Set(), last: null };
    created.promise = start((loaded, total) => {
      created.last = [loaded, total];
      for (const l of created.listeners) l(loaded, total);
    }).finally(() => inflight.delete(key));
    inflight.set(key, created as Inflight<unknown>);
    entry = created;
  } else if (entry.last && onProgress) onProgress(...entry.last);
  if (onProgress) entry.listeners.add(onProgress);
  return entry.promise;
}

/** Downloads in flight in this realm (tests use it to see sharing). */
export const inflightCount = () => inflight.size;

/** Hold a lock named after `key` across workers and tabs of this origin, where the Web Locks API exists. */
export async function exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const locks = typeof navigator !== 'undefined' ? (navigator as Navigator).locks : undefined;
  if (!locks?.request) return fn();
  return locks.request(`spec-decoder ${key}`, fn) as Promise<T>;
}
