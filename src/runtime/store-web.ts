/** Remembered records in the browser (page or worker): one IndexedDB object store. */
import type { KeyValueStore } from '../engine/store';

/** The IndexedDB database and object store the records live in (e2e/seed.setup.ts reads their keys). */
export const DB = 'spec-decoder';
export const STORE = 'records';

function open(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(DB, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error ?? new Error('IndexedDB could not be opened'));
  });
}

export class IndexedDbStore implements KeyValueStore {
  private db: Promise<IDBDatabase> | null = null;

  private async request<T>(mode: IDBTransactionMode, make: (s: IDBObjectStore) => IDBRequest<T>): Promise<T> {
    this.db ??= open();
    const db = await this.db;
    return new Promise((resolve, reject) => {
      const req = make(db.transaction(STORE, mode).objectStore(STORE));
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error ?? new Error('IndexedDB request failed'));
    });
  }

  async get(key: string): Promise<unknown> {
    return this.request('readonly', (s) => s.get(key));
  }

  async set(key: string, value: unknown): Promise<void> {
    await this.request('readwrite', (s) => s.put(value, key));
  }
}
