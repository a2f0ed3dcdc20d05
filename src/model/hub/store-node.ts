/**
 * The disk cache in Node, in the hub's own layout (what huggingface_hub and @huggingface/hub use, so files are shared
 * with Python and other tools): HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub, holding
 *   models--<org>--<name>/blobs/<etag>                    the content (sha256 for LFS files, git blob id otherwise)
 *   models--<org>--<name>/snapshots/<commit>/<file>       relative symlinks to the blobs
 *   models--<org>--<name>/refs/<revision>                 the commit a branch or tag pointed at last time
 * A blob is written under a temporary name and renamed only after the download is complete and verified, so a
 * truncated download never appears in the cache; a write that fails (a full disk) removes its partial file.
 * Node modules are imported lazily so that browser bundles can include this file.
 */
import { DownloadError } from '../errors';
import { isCommitSha, isNode } from './id';
import type { RepoInfo } from './info';
import type { CachedRepo, HubStore } from './store';

type Fs = typeof import('node:fs/promises');
type Path = typeof import('node:path');

const fsName = 'node:fs/promises';
const pathName = 'node:path';
const osName = 'node:os';

async function nodeModules(): Promise<{ fs: Fs; path: Path; os: typeof import('node:os') }> {
  const [fs, path, os] = await Promise.all([
    import(/* @vite-ignore */ fsName) as Promise<Fs>,
    import(/* @vite-ignore */ pathName) as Promise<Path>,
    import(/* @vite-ignore */ osName) as Promise<typeof import('node:os')>,
  ]);
  return { fs, path, os };
}

/** HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub (huggingface_hub's rule). */
export async function defaultHubCacheDir(): Promise<string> {
  const { path, os } = await nodeModules();
  if (isNode && process.env.HF_HUB_CACHE) return process.env.HF_HUB_CACHE;
  const home = (isNode && process.env.HF_HOME) || path.join(os.homedir(), '.cache', 'huggingface');
  return path.join(home, 'hub');
}

const repoFolder = (repo: string) => `models--${repo.split('/').join('--')}`;

const exists = async (fs: Fs, p: string) =>
  fs.stat(p).then(
    () => true,
    () => false,
  );

export class NodeHubStore implements HubStore {
  private constructor(readonly where: string) {}

  static async open(dir?: string): Promise<NodeHubStore> {
    return new NodeHubStore(dir ?? (await defaultHubCacheDir()));
  }

  private async paths(repo: string) {
    const m = await nodeModules();
    return { ...m, root: m.path.join(this.where, repoFolder(repo)) };
  }

  async loadInfo(_endpoint: string, repo: string, revision: string): Promise<RepoInfo | null> {
    const { fs, path, root } = await this.paths(repo);
    let commit = revision;
    if (!isCommitSha(revision)) {
      try {
        commit = (await fs.readFile(path.join(root, 'refs', revision), 'utf8')).trim();
      } catch {
        return null;
      }
      // An empty or damaged ref (a write cut short) names no commit: as if the revision were not cached (it read
      // "using the copy ... (commit )", then "config.json not found").
      if (!isCommitSha(commit)) return null;
    }
    const snapshot = path.join(root, 'snapshots', commit);
    if (!(await exists(fs, snapshot))) return null;
    const files: RepoInfo['files'] = {};
    const walk = async (dir: string) => {
      for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        if (entry.isDirectory()) await walk(full);
        else {
          const name = path.relative(snapshot, full).split(path.sep).join('/');
          const target = entry.isSymbolicLink() ? path.basename(await fs.readlink(full)) : undefined;
          const size = (await fs.stat(full).catch(() => null))?.size;
          if (size === undefined) continue; // a dangling link: its blob was removed
          files[name] = { size, ...(target ? { etag: target } : {}) };
        }
      }
    };
    await walk(snapshot);
    return { repo, revision, commit, files, gated: false };
  }

  async saveInfo(_endpoint: string, info: RepoInfo): Promise<void> {
    const { fs, path, root } = await this.paths(info.repo);
    await fs.mkdir(path.join(root, 'snapshots', info.commit), { recursive: true });
    if (isCommitSha(info.revision)) return;
    const ref = path.join(root, 'refs', info.revision);
    await fs.mkdir(path.dirname(ref), { recursive: true });
    await fs.writeFile(ref, info.commit);
  }

  async read(_endpoint: string, info: RepoInfo, file: string): Promise<Uint8Array | null> {
    const { fs, path, root } = await this.paths(info.repo);
    const want = info.files[file];
    if (!want) return null;
    const pointer = path.join(root, 'snapshots', info.commit, ...file.split('/'));
    const source = want.etag ? path.join(root, 'blobs', want.etag) : pointer;
    let bytes: Buffer;
    try {
      bytes = await fs.readFile(source);
    } catch {
      return null;
    }
    if (want.size !== undefined && bytes.byteLength !== want.size) return null;
    if (want.etag && !(await exists(fs, pointer))) await this.link(root, info.commit, file, want.etag);
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  private async link(root: string, commit: string, file: string, etag: string): Promise<void> {
    const { fs, path } = await nodeModules();
    const pointer = path.join(root, 'snapshots', commit, ...file.split('/'));
    const blob = path.join(root, 'blobs', etag);
    await fs.mkdir(path.dirname(pointer), { recursive: true });
    await fs.rm(pointer, { force: true });
    try {
      await fs.symlink(path.relative(path.dirname(pointer), blob), pointer);
    } catch {
      await fs.copyFile(blob, pointer); // no symlinks here (as huggingface_hub does on such systems)
    }
  }

  async write(_endpoint: string, info: RepoInfo, file: string, bytes: Uint8Array): Promise<void> {
    const { fs, path, root } = await this.paths(info.repo);
    const etag = info.files[file]?.etag;
    // The file being written (a blob's temporary name, or the snapshot file itself when there is no ETag): removed on
    // any failure (a full disk leaves part of it), so nothing half-written stays behind.
    let partial: string | undefined;
    try {
      if (!etag) {
        const pointer = path.join(root, 'snapshots', info.commit, ...file.split('/'));
        await fs.mkdir(path.dirname(pointer), { recursive: true });
        partial = pointer;
        await fs.writeFile(pointer, bytes);
        return;
      }
      const blob = path.join(root, 'blobs', etag);
      await fs.mkdir(path.dirname(blob), { recursive: true });
      partial = `${blob}.${process.pid}.${Math.random().toString(36).slice(2)}.incomplete`;
      await fs.writeFile(partial, bytes);
      await fs.rename(partial, blob);
      partial = undefined;
      await this.link(root, info.commit, file, etag);
    } catch (e) {
      if (partial) await fs.rm(partial, { force: true }).catch(() => {});
      throw new DownloadError(`could not keep ${file} in ${this.where}: ${(e as Error).message}`);
    }
  }

  async list(): Promise<CachedRepo[]> {
    const { fs, path } = await nodeModules();
    const out: CachedRepo[] = [];
    let entries: string[];
    try {
      entries = await fs.readdir(this.where);
    } catch {
      return [];
    }
    for (const name of entries) {
      if (!name.startsWith('models--')) continue;
      const root = path.join(this.where, name);
      const repo = name.slice('models--'.length).replace('--', '/');
      const refs = await fs.readdir(path.join(root, 'refs')).catch(() => [] as string[]);
      const snapshots = await fs.readdir(path.join(root, 'snapshots')).catch(() => [] as string[]);
      const files: CachedRepo['files'] = [];
      let bytes = 0;
      for (const blob of await fs.readdir(path.join(root, 'blobs')).catch(() => [] as string[])) {
        if (blob.endsWith('.incomplete')) continue;
        const size = (await fs.stat(path.join(root, 'blobs', blob))).size;
        files.push({ file: blob, bytes: size });
        bytes += size;
      }
      out.push({ repo, revisions: [...refs, ...snapshots.filter((s) => !refs.includes(s))], files, bytes });
    }
    return out;
  }

  async clear(repo?: string): Promise<{ files: number; bytes: number }> {
    const { fs, path } = await nodeModules();
    let files = 0;
    let bytes = 0;
    for (const entry of await this.list()) {
      if (repo !== undefined && entry.repo !== repo) continue;
      files += entry.files.length;
      bytes += entry.bytes;
      await fs.rm(path.join(this.where, repoFolder(entry.repo)), { recursive: true, force: true });
    }
    return { files, bytes };
  }
}
