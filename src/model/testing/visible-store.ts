/** A store for tests whose records can be read and edited directly (values copied through JSON, as a file's are). */
export function visibleStore(): {
  records: Map<string, unknown>;
  memory: { get(key: string): Promise<unknown>; set(key: string, value: unknown): Promise<void> };
} {
  const records = new Map<string, unknown>();
  return {
    records,
    memory: {
      get: async (k) => records.get(k),
      set: async (k, v) => {
        records.set(k, JSON.parse(JSON.stringify(v)));
      },
    },
  };
}
