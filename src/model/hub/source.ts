/**
 * A hub repository as a FileSource: `hf:org/name[@revision]` on a configurable endpoint.
 *
 * One load: the model info of the revision (one API request: commit, files, sizes, checksums); every file then comes
 * from the cache when stored with the ETag the hub lists now (no request at all), else from
 * resolve/<commit>/<file> (so all files are of one commit even if the branch moves meanwhile), verified against the
 * listed size and checksum, and only then stored. Offline (the hub unreachable or failing) the last info stored for
 * the revision is used, and files come from the cache alone.
 *
 * Why not a library's downloader: @huggingface/hub's downloadFileToCacheDir writes the same layout but no refs/ (so
 * a branch cannot load offline), files each under their own last commit's snapshot, no progress, no checksum check,
 * and two concurrent calls write one .incomplete file; transformers.js's getModelFile keeps a truncated body
 * (zero-padded to Content-Length) in its cache and never revalidates. We share transformers.js's browser cache
 * (store-browser.ts), its tokenizer and its chat templates, and the hub's cache layout.
 */
import { DownloadError, ModelLoadError } from '../errors';
import { type ByteProgress, readBody, request, verify } from './download';
import { DEFAULT_ENDPOINT, hubEndpoint, hubTimeoutMs, hubToken, isNode, resolveUrl } from './id';
import { fetchRepoInfo, hubError, type RepoInfo } from './info';
import { exclusive, shareDownload } from './shared';
import type { HubStore } from './store';
import { BrowserHubStore } from './store-browser';
import { NodeHubStore } from './store-node';

export interface HubOptions {
  /** The hub host (default: HF_ENDPOINT in Node, else https://huggingface.co). */
  endpoint?: string;
  /** Access token for gated or private repos (default: HF_TOKEN in Node). */
  token?: string;
  /**
   * Where verified files are kept: true (default) for the platform's cache (HF_HOME/hub in Node, the Cache API in
   * the browser), false for none, or a store of your own.
   */
  cache?: boolean | HubStore;
  /** Node: the cache folder instead of HF_HUB_CACHE / HF_HOME/hub. */
  cacheDir?: string;
  /**
   * Milliseconds a request waits for the hub's answer, and a download for its next bytes, before it fails as timed
   * out (default: HF_HUB_DOWNLOAD_TIMEOUT seconds in Node, else 30 s). A model info request that times out takes
   * the offline path (the cached copy, with a warning).
   */
  timeoutMs?: number;
}

export interface HubReadEvents {
  /** Bytes arriving (from the network, or all at once from the cache). */
  progress?: ByteProgress;
  /** The file is not cached: a download starts. */
  download?: () => void;
  /** Something the user should know that does not stop the load (offline, cache full). */
  warning?: (message: string) => void;
}

/** The platform's hub cache, or null where there is none (a browser without the Cache API). */
export async function defaultHubStore(cacheDir?: string): Promise<HubStore | null> {
  if (isNode) return NodeHubStore.open(cacheDir);
  return BrowserHubStore.available() ? new BrowserHubStore() : null;
}

export class HubSource {
  readonly endpoint: string;
  readonly location: string;
  private readonly token: string | undefined;
  private readonly timeoutMs: number;
  private infoPromise: Promise<{ info: RepoInfo; offline: boolean }> | null = null;
  private storePromise: Promise<HubStore | null> | null = null;

  constructor(
    readonly repo: string,
    readonly revision: string,
    private readonly options: HubOptions = {},
    private readonly onWarning?: (message: string) => void,
  ) {
    try {
      this.endpoint = hubEndpoint(options.endpoint);
      this.timeoutMs = hubTimeoutMs(options.timeoutMs);
    } catch (e) {
      throw new ModelLoadError(`hf:${repo}@${revision}: ${(e as Error).message}`);
    }
    this.token = hubToken(options.token);
    this.location = `hf:${repo}@${revision}${this.endpoint === DEFAULT_ENDPOINT ? '' : ` on ${this.endpoint}`}`;
  }

  private get id(): string {
    return `hf:${this.repo}@${this.revision}`;
  }

  private headers(): Record<string, string> {
    return this.token ? { Authorization: `Bearer ${this.token}` } : {};
  }

  private store(): Promise<HubStore | null> {
    const { cache = true, cacheDir } = this.options;
    this.storePromise ??=
      cache === false ? Promise.resolve(null) : cache === true ? defaultHubStore(cacheDir) : Promise.resolve(cache);
    return this.storePromise;
  }

  /** The revision's info: from the hub, or offline from the cache. */
  info(): Promise<{ info: RepoInfo; offline: boolean }> {
    this.infoPromise ??= this.fetchInfo();
    this.infoPromise.catch(() => {
      this.infoPromise = null; // a failed lookup is retried by the next load
    });
    return this.infoPromise;
  }

  private async fetchInfo(): Promise<{ info: RepoInfo; offline: boolean }> {
    const store = await this.store();
    try {
      const info = await fetchRepoInfo(
        this.endpoint,
        this.repo,
        this.revision,
        this.headers(),
        this.id,
        this.timeoutMs,
      );
      await store?.saveInfo(this.endpoint, info).catch(() => {});
      return { info, offline: false };
    } catch (e) {
      const unreachable = e instanceof DownloadError && (e.details.network || (e.details.status ?? 0) >= 500);
      const cached = unreachable
        ? await store?.loadInfo(this.endpoint, this.repo, this.revision).catch(() => null)
        : null;
      if (!cached) throw e;
      this.onWarning?.(
        `${this.id}: ${(e as Error).message.replace(`${this.id}: `, '')}; using the copy in ${store?.where} (commit ${cached.commit.slice(0, 8)})`,
      );
      return { info: cached, offline: true };
    }
  }

  /** The size the hub lists for a file (for overall progress), if it lists the file. */
  async size(file: string): Promise<number | undefined> {
    return (await this.info()).info.files[file]?.size;
  }

  async read(file: string, events: HubReadEvents = {}): Promise<Uint8Array | null> {
    const { info, offline } = await this.info();
    const meta = info.files[file];
    if (!meta) return null;
    const label = `${this.id}: ${file}`;
    const url = resolveUrl(this.endpoint, this.repo, info.commit, file);
    const store = await this.store();
    const fetchOnce = (progress: ByteProgress) =>
      exclusive(`${url} ${meta.etag ?? ''}`, async () => {
        const cached = await store?.read(this.endpoint, info, file).catch(() => null);
        if (cached) {
          progress(cached.byteLength, cached.byteLength);
          return cached;
        }
        if (offline)
          throw new DownloadError(`${label}: not in ${store?.where ?? 'any cache'} and the hub cannot be reached`);
        events.download?.();
        // cache: 'no-store': the verified copy goes to our cache; the HTTP cache would keep a second one.
        const res = await request(url, { headers: this.headers(), cache: 'no-store' }, label, this.timeoutMs);
        if (!res.ok) throw await hubError(res, label, this.endpoint, this.repo);
        const bytes = await readBody(res, label, progress, meta.size, this.timeoutMs);
        await verify(bytes, meta, label);
        if (store) {
          await store
            .write(this.endpoint, info, file, bytes)
            .catch((e: Error) => events.warning?.(`${this.id}: ${e.message}`));
        }
        return bytes;
      });
    return shareDownload(`${url} ${meta.etag ?? ''}`, fetchOnce, events.progress);
  }
}
