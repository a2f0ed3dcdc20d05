/**
 * Hub ids and the hub client's conventions: `hf:org/name[@revision]`; in Node HF_ENDPOINT (the host), HF_TOKEN and
 * HF_HOME / HF_HUB_CACHE (the cache) as huggingface_hub and @huggingface/hub read them.
 */
import { ModelLoadError } from '../errors';
import { DEFAULT_TIMEOUT_MS } from './download';

export const DEFAULT_ENDPOINT = 'https://huggingface.co';

export interface HubRef {
  /** org/name */
  repo: string;
  /** Branch, tag or commit sha (default main). */
  revision: string;
}

/** A name as the hub takes it: letters, digits, `_`, `-`, `.`, not starting or ending with `-` or `.`. */
const NAME = '[A-Za-z0-9_](?:[\\w.-]*[A-Za-z0-9_])?';
const HUB_ID = new RegExp(`^hf:((?:${NAME}/)?${NAME})(?:@([\\w./-]+))?$`);

/**
 * `hf:org/name[@rev]`, or `hf:name[@rev]` for the hub's ids without an organisation (gpt2) → its parts; null for
 * other specs; a clear error for a malformed hub id.
 */
export function parseHubId(spec: string): HubRef | null {
  if (!spec.startsWith('hf:')) return null;
  const m = HUB_ID.exec(spec);
  if (!m || m[1]?.includes('..') || m[2]?.includes('..')) {
    throw new ModelLoadError(`bad hub id "${spec}": expected hf:org/name, hf:name or either @revision`);
  }
  return { repo: m[1] as string, revision: m[2] ?? 'main' };
}

export const isCommitSha = (revision: string) => /^[0-9a-f]{40}$/.test(revision);

export const isNode = typeof process !== 'undefined' && !!process.versions?.node && typeof window === 'undefined';

const env = (name: string): string | undefined => (isNode ? process.env[name] || undefined : undefined);

/**
 * The hub host: the option, else HF_ENDPOINT in Node, else huggingface.co; without a trailing slash. One that is not
 * an http(s) URL is a ModelLoadError naming where it came from (every request URL is built on it).
 */
export function hubEndpoint(option?: string): string {
  const fromEnv = option ? undefined : env('HF_ENDPOINT');
  const value = option || fromEnv || DEFAULT_ENDPOINT;
  let protocol = '';
  try {
    protocol = new URL(value).protocol;
  } catch {}
  if (protocol !== 'http:' && protocol !== 'https:') {
    const name = fromEnv ? 'HF_ENDPOINT' : 'the hub endpoint';
    throw new ModelLoadError(
      `${name} "${value}" is not ${protocol ? 'an http(s)' : 'a'} URL (expected e.g. ${DEFAULT_ENDPOINT})`,
    );
  }
  return value.replace(/\/+$/, '');
}

/**
 * How long (ms) a hub request waits for an answer, and a download for its next bytes: the option, else
 * HF_HUB_DOWNLOAD_TIMEOUT (seconds, huggingface_hub's variable) in Node, else 30 s.
 */
export function hubTimeoutMs(option?: number): number {
  if (option !== undefined) {
    if (!(option > 0 && Number.isFinite(option))) {
      throw new ModelLoadError(`the hub timeout ${option} ms is not a positive number of milliseconds`);
    }
    return option;
  }
  const value = env('HF_HUB_DOWNLOAD_TIMEOUT');
  if (value === undefined) return DEFAULT_TIMEOUT_MS;
  const secs = Number(value);
  if (!(secs > 0 && Number.isFinite(secs))) {
    throw new ModelLoadError(`HF_HUB_DOWNLOAD_TIMEOUT "${value}" is not a number of seconds (e.g. 30)`);
  }
  return secs * 1000;
}

/** The access token: the option, else HF_TOKEN in Node (HUGGING_FACE_HUB_TOKEN as huggingface_hub's fallback). */
export function hubToken(option?: string): string | undefined {
  return option || env('HF_TOKEN') || env('HUGGING_FACE_HUB_TOKEN');
}

/** `{endpoint}/{repo}/resolve/{revision}/{file}`: the URL the hub, transformers.js and its browser cache use. */
export function resolveUrl(endpoint: string, repo: string, revision: string, file: string): string {
  return `${endpoint}/${repo}/resolve/${encodeURIComponent(revision)}/${file.split('/').map(encodeURIComponent).join('/')}`;
}

export function infoUrl(endpoint: string, repo: string, revision: string): string {
  return `${endpoint}/api/models/${repo}/revision/${encodeURIComponent(revision)}?blobs=true`;
}
