/** Where verified hub files are kept between visits: the browser's Cache API, or HF_HOME/hub on disk in Node. */
import type { RepoInfo } from './info';

export interface CachedRepo {
  repo: string;
  /** The hub the files came from (the browser cache keys by URL; the disk cache is shared by all endpoints). */
  endpoint?: string;
  /** Revisions (branches, tags, shas) with cached files. */
  revisions: string[];
  files: { file: string; bytes: number }[];
  bytes: number;
}

export interface HubStore {
  /** Where it lives, for messages ("the browser cache", a folder). */
  readonly where: string;
  /** The last known info for a revision (commit and files), to load offline. */
  loadInfo(endpoint: string, repo: string, revision: string): Promise<RepoInfo | null>;
  saveInfo(endpoint: string, info: RepoInfo): Promise<void>;
  /** The file's bytes if stored with the ETag `info` lists for it, else null (then it is downloaded again). */
  read(endpoint: string, info: RepoInfo, file: string): Promise<Uint8Array | null>;
  /** Store a complete, verified file (throws a readable error when full: quota, disk space). */
  write(endpoint: string, info: RepoInfo, file: string, bytes: Uint8Array): Promise<void>;
  list(): Promise<CachedRepo[]>;
  /** Remove one repo's files (or every hub model's); returns what was freed. */
  clear(repo?: string): Promise<{ files: number; bytes: number }>;
}

/** An ETag header value without W/ and quotes. */
export const bareEtag = (etag: string | null | undefined) => etag?.replace(/^W\//, '').replace(/^"|"$/g, '') ?? '';
