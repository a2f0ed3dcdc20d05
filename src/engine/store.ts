/**
 * Small records remembered between sessions (a found skip set, measured costs), per model and device: a file in
 * Node, IndexedDB in the browser (src/runtime/store-*.ts). Values are JSON; a failing store never fails a
 * generation (what cannot be remembered is simply measured again).
 */
export interface KeyValueStore {
  get(key: string): Promise<unknown>;
  set(key: string, value: unknown): Promise<void>;
}

/** Keeps records for the life of the engine only. */
export class MemoryStore implements KeyValueStore {
  private readonly map = new Map<string, string>();
  async get(key: string): Promise<unknown> {
    const v = this.map.get(key);
    return v === undefined ? undefined : JSON.parse(v);
  }
  async set(key: string, value: unknown): Promise<void> {
    this.map.set(key, JSON.stringify(value));
  }
}

/** Read without failing: a broken store reads as empty. */
export async function safeGet(store: KeyValueStore, key: string): Promise<unknown> {
  try {
    return await store.get(key);
  } catch {
    return undefined;
  }
}

/** Write without failing. */
export async function safeSet(store: KeyValueStore, key: string, value: unknown): Promise<void> {
  try {
    await store.set(key, value);
  } catch {
    // Not remembered: measured again next time.
  }
}
