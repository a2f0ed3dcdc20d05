/**
 * One HTTP download into memory: the request, the body read with progress, and the checks that make a download
 * "complete and verified" before anything stores it: the byte count against Content-Length and the expected size,
 * and the hub's checksum (sha256 for LFS files, the git blob id for the others) when it is known.
 * Every failure is a DownloadError whose one-line message starts with `label` (the model and file).
 */
import { DownloadError } from '../errors';

export type ByteProgress = (loaded: number, total: number | undefined) => void;

export interface Expected {
  size?: number;
  /** LFS files: sha256 of the content. */
  sha256?: string;
  /** Regular files: the git blob id, sha1("blob <size>\0" + content). */
  blobId?: string;
}

const hex = (buf: ArrayBuffer) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, '0')).join('');
const short = (h: string) => `${h.slice(0, 12)}…`;

/** The URL's origin for messages; the URL itself where it does not parse (a message must never throw). */
const origin = (url: string) => {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
};

/**
 * How long a request waits for its response headers, and a body read for its next bytes, before giving up (a server
 * that accepts the connection and then says nothing would otherwise hold a load forever).
 */
export const DEFAULT_TIMEOUT_MS = 30_000;

const seconds = (ms: number) => `${Number((ms / 1000).toPrecision(3))} s`;

/**
 * fetch(), with a network failure (no answer at all) as a DownloadError marked `network`, and so is no answer within
 * `timeoutMs` (`<origin> timed out`). A GET that fails before any answer is tried once more: a kept-alive connection
 * the server has just closed fails that way (one that timed out is not tried again). The caller's `init.signal`
 * aborts it at any time, the body included.
 */
export async function request(
  url: string,
  init: RequestInit,
  label: string,
  timeoutMs = DEFAULT_TIMEOUT_MS,
): Promise<Response> {
  let failure: unknown;
  for (let attempt = 0; attempt < 2; attempt++) {
    const timer = new AbortController();
    const signal = init.signal ? AbortSignal.any([init.signal, timer.signal]) : timer.signal;
    const timeout = setTimeout(() => timer.abort(), timeoutMs);
    try {
      return await fetch(url, { ...init, signal });
    } catch (e) {
      failure = e;
      if (init.signal?.aborted) break;
      if (timer.signal.aborted) {
        throw new DownloadError(`${label}: ${origin(url)} timed out (no answer within ${seconds(timeoutMs)})`, {
          network: true,
        });
      }
    } finally {
      clearTimeout(timeout);
    }
  }
  const e = failure;
  const cause = e instanceof Error ? ((e.cause as Error | undefined)?.message ?? e.message) : String(e);
  const hint = init.signal?.aborted ? '' : crossOriginHint(url);
  throw new DownloadError(`${label}: cannot reach ${origin(url)} (${cause})${hint}`, {
    network: true,
  });
}

/**
 * In a browser a server on another origin that does not allow this page (no Access-Control-Allow-Origin) fails
 * exactly as one that is down, "Failed to fetch": the page is told it may be either.
 */
function crossOrigin(url: string): boolean {
  const here = (globalThis as { location?: { origin?: string } }).location?.origin;
  if (!here || here === 'null' || !/^https?:/.test(here)) return false;
  try {
    return new URL(url, here).origin !== here;
  } catch {
    return false;
  }
}

const crossOriginHint = (url: string): string =>
  crossOrigin(url)
    ? `; it is down, or it does not let this page's origin read its files (CORS: it must answer with Access-Control-Allow-Origin)`
    : '';

/**
 * Read a response body with progress; a body that ends early, errors or sends nothing for `timeoutMs` is a
 * DownloadError naming the file (marked `network`: the connection failed, not the hub).
 */
export async function readBody(
  res: Response,
  label: string,
  onProgress?: ByteProgress,
  expectedSize?: number,
  timeoutMs = DEFAULT_TIMEOUT_MS,
): Promise<Uint8Array> {
  const header = res.headers.get('content-length');
  const announced = header !== null && /^\d+$/.test(header) ? Number(header) : undefined;
  const total = announced ?? expectedSize;
  let out = new Uint8Array(total ?? 0);
  let loaded = 0;
  const cutOff = (cause: string) =>
    new DownloadError(
      `${label}: download cut off after ${loaded} of ${total ?? 'unknown'} bytes (${cause}); nothing was cached, try again`,
      { network: true },
    );
  if (!res.body) {
    out = new Uint8Array(await res.arrayBuffer());
    loaded = out.byteLength;
  } else {
    const reader = res.body.getReader();
    // One watchdog for the whole body (not a timer per chunk): it fires `timeoutMs` after the last bytes arrived.
    let lastBytes = Date.now();
    let watchdog: ReturnType<typeof setTimeout> | undefined;
    const stalled = new Promise<'stalled'>((resolve) => {
      const check = () => {
        const quiet = Date.now() - lastBytes;
        if (quiet >= timeoutMs) resolve('stalled');
        else watchdog = setTimeout(check, timeoutMs - quiet);
      };
      watchdog = setTimeout(check, timeoutMs);
    });
    try {
      for (;;) {
        let step: ReadableStreamReadResult<Uint8Array> | 'stalled';
        try {
          step = await Promise.race([reader.read(), stalled]);
        } catch (e) {
          const err = e as Error;
          throw cutOff((err.cause as Error | undefined)?.message ?? err.message ?? String(e));
        }
        if (step === 'stalled') {
          reader.cancel().catch(() => {}); // closes the connection
          throw cutOff(`nothing from ${origin(res.url)} for ${seconds(timeoutMs)}: timed out`);
        }
        if (step.done) break;
        lastBytes = Date.now();
        const chunk = step.value;
        if (loaded + chunk.byteLength > out.byteLength) {
          const grown = new Uint8Array(Math.max(out.byteLength * 2, loaded + chunk.byteLength, 1 << 16));
          grown.set(out.subarray(0, loaded));
          out = grown;
        }
        out.set(chunk, loaded);
        loaded += chunk.byteLength;
        onProgress?.(loaded, total);
      }
    } finally {
      clearTimeout(watchdog);
    }
  }
  if (total !== undefined && loaded !== total) throw cutOff('the connection closed early');
  return loaded === out.byteLength ? out : out.subarray(0, loaded);
}

/** Check size and checksum; a mismatch means the bytes are not the file the hub described. */
export async function verify(bytes: Uint8Array, expected: Expected, label: string): Promise<void> {
  if (expected.size !== undefined && bytes.byteLength !== expected.size) {
    throw new DownloadError(
      `${label}: got ${bytes.byteLength} bytes but the hub lists ${expected.size}; nothing was cached, try again`,
    );
  }
  let want: string | undefined;
  let got: string | undefined;
  let algo = '';
  if (expected.sha256) {
    algo = 'sha256';
    want = expected.sha256;
    got = hex(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>));
  } else if (expected.blobId) {
    algo = 'git blob id';
    want = expected.blobId;
    const head = new TextEncoder().encode(`blob ${bytes.byteLength}\0`);
    const all = new Uint8Array(head.byteLength + bytes.byteLength);
    all.set(head);
    all.set(bytes, head.byteLength);
    got = hex(await crypto.subtle.digest('SHA-1', all));
  }
  if (want && got !== want) {
    throw new DownloadError(
      `${label}: the downloaded bytes do not match the hub's checksum (${algo} ${short(want)} expected, ${short(got as string)} received); nothing was cached, try again`,
    );
  }
}
