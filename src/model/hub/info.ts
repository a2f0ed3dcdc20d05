/**
 * What the hub says about one revision of a repo (GET /api/models/<repo>/revision/<rev>?blobs=true): the commit
 * sha every file is then fetched at (so one load never mixes two commits), the files with their sizes and
 * checksums (the ETags downloads are verified and cached entries revalidated against), and whether it is gated.
 * Also the hub's HTTP errors turned into one-line messages naming repo, file and status.
 */
import { DownloadError } from '../errors';
import { readBody, request } from './download';
import { infoUrl } from './id';

export interface RepoFile {
  size?: number;
  /** sha256 for LFS files, the git blob id for others: the hub's ETag and the cache's content address. */
  etag?: string;
  sha256?: string;
  blobId?: string;
}

export interface RepoInfo {
  repo: string;
  /** The revision asked for (branch, tag or sha). */
  revision: string;
  commit: string;
  files: Record<string, RepoFile>;
  gated: boolean;
}

/** The hub's error for a failed request, as one line: `hf:repo: file: what happened (HTTP status)`. */
export async function hubError(res: Response, label: string, endpoint: string, repo: string): Promise<DownloadError> {
  const code = res.headers.get('x-error-code') ?? undefined;
  const status = res.status;
  const http = `HTTP ${status}${res.statusText ? ` ${res.statusText}` : ''}`;
  let message: string;
  if (code === 'GatedRepo' || (status === 403 && !code)) {
    message =
      status === 401
        ? `${label}: the model is gated (${http}): accept its licence on ${endpoint}/${repo} and pass an access token (HF_TOKEN in Node, the token option in the browser)`
        : `${label}: the model is gated and this token has no access (${http}): accept its licence on ${endpoint}/${repo} with the account the token belongs to`;
  } else if (code === 'RepoNotFound') {
    message = `${label}: repository not found at ${endpoint} (${http}); check the id, or pass a token if it is private`;
  } else if (code === 'RevisionNotFound') {
    message = `${label}: revision not found (${http})`;
  } else if (code === 'EntryNotFound' || status === 404) {
    message = `${label}: not found (${http})`;
  } else if (status === 401) {
    message = `${label}: not authorised (${http}); the repository may be private or gated: pass an access token`;
  } else if (status >= 500) {
    message = `${label}: the hub failed (${http}); try again later`;
  } else {
    message = `${label}: unexpected answer ${http}`;
  }
  await res.body?.cancel().catch(() => {});
  return new DownloadError(message, { status, ...(code ? { code } : {}) });
}

export async function fetchRepoInfo(
  endpoint: string,
  repo: string,
  revision: string,
  headers: Record<string, string>,
  label: string,
  timeoutMs?: number,
): Promise<RepoInfo> {
  const res = await request(infoUrl(endpoint, repo, revision), { headers, cache: 'no-store' }, label, timeoutMs);
  if (!res.ok) throw await hubError(res, label, endpoint, repo);
  // Read with the stall timeout (a hub that stops mid-answer is unreachable, not a hang).
  const text = new TextDecoder().decode(await readBody(res, label, undefined, undefined, timeoutMs));
  let body: {
    sha?: unknown;
    gated?: unknown;
    siblings?: { rfilename?: unknown; size?: unknown; blobId?: unknown; lfs?: { sha256?: unknown; size?: unknown } }[];
  };
  try {
    body = JSON.parse(text);
  } catch (e) {
    throw new DownloadError(`${label}: the hub's model info is not JSON (${(e as Error).message})`);
  }
  if (typeof body.sha !== 'string' || !Array.isArray(body.siblings)) {
    throw new DownloadError(`${label}: the hub's model info has no commit sha or file list`);
  }
  const files: Record<string, RepoFile> = {};
  for (const s of body.siblings) {
    if (typeof s.rfilename !== 'string') continue;
    const sha256 = typeof s.lfs?.sha256 === 'string' ? s.lfs.sha256 : undefined;
    const blobId = typeof s.blobId === 'string' ? s.blobId : undefined;
    const size = typeof s.lfs?.size === 'number' ? s.lfs.size : typeof s.size === 'number' ? s.size : undefined;
    const etag = sha256 ?? blobId;
    files[s.rfilename] = {
      ...(size !== undefined ? { size } : {}),
      ...(etag ? { etag } : {}),
      ...(sha256 ? { sha256 } : {}),
      ...(blobId && !sha256 ? { blobId } : {}),
    };
  }
  return { repo, revision, commit: body.sha, files, gated: body.gated !== false && body.gated !== undefined };
}
