/**
 * The browser's hub cache: the Cache API, in the cache transformers.js uses ("transformers-cache") with the keys it
 * uses (the resolve URL at the requested revision), so files either library downloaded are found by the other.
 * Why the Cache API and not OPFS: transformers.js's users already have their files there; entries keep their
 * headers (ETag, commit) beside the body; it works the same in windows and workers; both count against the same
 * origin quota, so OPFS would not hold more.
 *
 * Only complete, verified files are put here. An entry is reused when its ETag is the one the hub lists for the
 * revision now (or, offline, the last time), so a changed file is downloaded again and an unchanged one never is.
 */
import { DownloadError } from '../errors';
import { resolveUrl } from './id';
import type { RepoInfo } from './info';
import { bareEtag, type CachedRepo, type HubStore } from './store';

export const BROWSER_CACHE_NAME = 'transformers-cache';

const RESOLVE = /^(https?:\/\/.+?)\/([\w.-]+\/[\w.-]+)\/resolve\/([^/]+)\/(.+)$/;
const INFO = /^(https?:\/\/.+?)\/api\/models\/([\w.-]+\/[\w.-]+)\/revision\/([^/?]+)\?spec-decoder-info$/;

const infoKey = (endpoint: string, repo: string, revision: string) =>
  `${endpoint}/api/models/${repo}/revision/${encodeURIComponent(revision)}?spec-decoder-info`;

async function describeQuota(): Promise<string> {
  try {
    const { usage, quota } = await navigator.storage.estimate();
    if (usage !== undefined && quota !== undefined)
      return `${(usage / 1e6).toFixed(0)} MB of ${(quota / 1e6).toFixed(0)} MB used`;
  } catch {}
  return 'quota unknown';
}

export class BrowserHubStore implements HubStore {
  readonly where = 'the browser cache';

  constructor(private readonly name = BROWSER_CACHE_NAME) {}

  static available(): boolean {
    return typeof caches !== 'undefined';
  }

  private open(): Promise<Cache> {
    return caches.open(this.name);
  }

  async loadInfo(endpoint: string, repo: string, revision: string): Promise<RepoInfo | null> {
    const res = await (await this.open()).match(infoKey(endpoint, repo, revision));
    return res ? ((await res.json()) as RepoInfo) : null;
  }

  async saveInfo(endpoint: string, info: RepoInfo): Promise<void> {
    const body = JSON.stringify(info);
    await (await this.open()).put(
      infoKey(endpoint, info.repo, info.revision),
      new Response(body, { headers: { 'content-type': 'application/json' } }),
    );
  }

  async read(endpoint: string, info: RepoInfo, file: string): Promise<Uint8Array | null> {
    const want = info.files[file];
    const res = await (await this.open()).match(resolveUrl(endpoint, info.repo, info.revision, file));
    if (!res || !want) return null;
    if (want.etag && bareEtag(res.headers.get('etag')) !== want.etag) return null;
    const bytes = new Uint8Array(await res.arrayBuffer());
    if (want.size !== undefined && bytes.byteLength !== want.size) return null;
    return bytes;
  }

  async write(endpoint: string, info: RepoInfo, file: string, bytes: Uint8Array): Promise<void> {
    const etag = info.files[file]?.etag;
    const headers: Record<string, string> = {
      'content-type': 'application/octet-stream',
      'content-length': String(bytes.byteLength),
      'x-repo-commit': info.commit,
      ...(etag ? { etag: `"${etag}"` } : {}),
    };
    const cache = await this.open();
    try {
      await cache.put(
        resolveUrl(endpoint, info.repo, info.revision, file),
        new Response(bytes as Uint8Array<ArrayBuffer>, { headers }),
      );
    } catch (e) {
      const quota = e instanceof DOMException && e.name === 'QuotaExceededError';
      throw new DownloadError(
        quota
          ? `could not keep ${file} (${(bytes.byteLength / 1e6).toFixed(1)} MB) in the browser cache: storage quota exceeded (${await describeQuota()}); it will be downloaded again next time`
          : `could not keep ${file} in the browser cache: ${(e as Error).message}`,
      );
    }
  }

  async list(): Promise<CachedRepo[]> {
    const cache = await this.open();
    const repos = new Map<string, CachedRepo>();
    for (const req of await cache.keys()) {
      const m = RESOLVE.exec(req.url);
      if (!m) continue;
      const [, endpoint, repo, revision, file] = m as unknown as [string, string, string, string, string];
      const res = await cache.match(req);
      const bytes = Number(res?.headers.get('content-length') ?? 0);
      const key = `${endpoint} ${repo}`;
      const entry = repos.get(key) ?? { repo, endpoint, revisions: [], files: [], bytes: 0 };
      const rev = decodeURIComponent(revision);
      if (!entry.revisions.includes(rev)) entry.revisions.push(rev);
      entry.files.push({ file: decodeURIComponent(file), bytes });
      entry.bytes += bytes;
      repos.set(key, entry);
    }
    return [...repos.values()];
  }

  async clear(repo?: string): Promise<{ files: number; bytes: number }> {
    const cache = await this.open();
    let files = 0;
    let bytes = 0;
    for (const req of await cache.keys()) {
      const m = RESOLVE.exec(req.url) ?? INFO.exec(req.url);
      if (!m || (repo !== undefined && m[2] !== repo)) continue;
      if (RESOLVE.test(req.url)) {
        files++;
        bytes += Number((await cache.match(req))?.headers.get('content-length') ?? 0);
      }
      await cache.delete(req);
    }
    return { files, bytes };
  }
}
