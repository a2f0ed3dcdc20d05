/**
 * What the hub cache holds and how to empty it, for the page and the element (the browser's Cache API) or for Node
 * (HF_HOME/hub), plus the origin's storage use in the browser.
 */
import { defaultHubStore } from './source';
import type { CachedRepo } from './store';

export type { CachedRepo } from './store';

/** Hub models kept in this browser (or Node's hub cache): repo, revisions, files and bytes. */
export async function listCachedModels(): Promise<CachedRepo[]> {
  return (await (await defaultHubStore())?.list()) ?? [];
}

/** Remove one hub model's files (or every hub model's); resolves with what was freed. */
export async function clearCachedModels(repo?: string): Promise<{ files: number; bytes: number }> {
  return (await (await defaultHubStore())?.clear(repo)) ?? { files: 0, bytes: 0 };
}

/** The origin's storage use and quota (browser), when the browser tells. */
export async function storageEstimate(): Promise<{ usage: number; quota: number } | null> {
  if (typeof navigator === 'undefined' || !navigator.storage?.estimate) return null;
  const { usage, quota } = await navigator.storage.estimate();
  return usage === undefined || quota === undefined ? null : { usage, quota };
}
