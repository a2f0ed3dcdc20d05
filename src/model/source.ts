/**
 * Where model files come from: a local folder (a URL in the browser, a path in Node) or a Hugging Face hub
 * repository (`hf:org/name` or `hf:org/name@revision`, see hub/). Loads report progress in transformers.js's
 * progress_callback shape: per file `initiate`, `download` (only when the bytes come from the network), `progress`,
 * `done`, and per model `progress_total` over all its files.
 */
import { DownloadError, ModelLoadError } from './errors';
import { type ByteProgress, readBody, request } from './hub/download';
import { isNode, parseHubId } from './hub/id';
import { exclusive, shareDownload } from './hub/shared';
import { type HubOptions, type HubReadEvents, HubSource } from './hub/source';

export interface ProgressInfo {
  status: 'initiate' | 'download' | 'progress' | 'progress_total' | 'done' | 'building' | 'ready' | 'warning';
  /** The model (its spec as given). */
  name: string;
  file?: string;
  loaded?: number;
  total?: number;
  /** 0-100 for 'progress' and 'progress_total'. */
  progress?: number;
  /** 'progress_total': every file of the model so far. */
  files?: Record<string, { loaded: number; total: number }>;
  /** 'warning': what happened (the load goes on). */
  message?: string;
}
export type ProgressCallback = (info: ProgressInfo) => void;

export interface FileSource {
  /** Human-readable location, used in error messages. */
  readonly location: string;
  /** The whole file; `null` when it does not exist (other failures throw ModelLoadError). */
  read(file: string, events?: HubReadEvents): Promise<Uint8Array | null>;
  /** The file's size when known before reading it (the hub lists sizes), for overall progress. */
  size?(file: string): Promise<number | undefined>;
}

export type { HubOptions } from './hub/source';

class HttpSource implements FileSource {
  constructor(readonly location: string) {}

  async read(file: string, events: HubReadEvents = {}) {
    const url = new URL(file, this.location.endsWith('/') ? this.location : `${this.location}/`).href;
    // Two loads of one URL at once (a draft that is the target) share one download; across workers (two elements)
    // the downloads of one URL take turns (a static server that cut several concurrent 28 MB streams short).
    return shareDownload(url, (progress) => exclusive(url, () => this.fetch(url, file, progress)), events.progress);
  }

  private async fetch(url: string, file: string, progress: ByteProgress): Promise<Uint8Array | null> {
    const label = `${this.location}: ${file}`;
    const res = await request(url, {}, label);
    if (res.status === 404) {
      await res.body?.cancel().catch(() => {});
      return null;
    }
    if (!res.ok) throw new DownloadError(`${label}: HTTP ${res.status} ${res.statusText}`, { status: res.status });
    // Single-page-app servers answer unknown paths with index.html: that is a missing file, not a model file.
    if (res.headers.get('content-type')?.includes('text/html') && !file.endsWith('.html')) {
      await res.body?.cancel().catch(() => {});
      return null;
    }
    return readBody(res, label, progress);
  }
}

class FsSource implements FileSource {
  constructor(readonly location: string) {}

  async read(file: string, events: HubReadEvents = {}) {
    const fsName = 'node:fs/promises';
    const pathName = 'node:path';
    const fs = (await import(/* @vite-ignore */ fsName)) as typeof import('node:fs/promises');
    const path = (await import(/* @vite-ignore */ pathName)) as typeof import('node:path');
    const full = path.join(this.location, file);
    try {
      // Read in chunks into one array: fs.readFile refuses files over 2 GiB (a 1.7B checkpoint is 3.4 GB).
      const handle = await fs.open(full, 'r');
      try {
        const { size } = await handle.stat();
        const out = new Uint8Array(size);
        for (let at = 0; at < size; ) {
          const { bytesRead } = await handle.read(out, at, Math.min(2 ** 28, size - at), at);
          if (bytesRead === 0) throw new ModelLoadError(`cannot read ${full}: the file ended at byte ${at} of ${size}`);
          at += bytesRead;
          events.progress?.(at, size);
        }
        if (size === 0) events.progress?.(0, 0);
        return out;
      } finally {
        await handle.close();
      }
    } catch (e) {
      if (e instanceof ModelLoadError) throw e;
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') {
        // Said of the folder when it is the folder that is wrong ("config.json not found in" a folder that does not
        // exist; "cannot read x/config.json: ENOTDIR" for a file given as the folder).
        const folder = await fs.stat(this.location).catch(() => null);
        if (!folder) throw new ModelLoadError(`${this.location}: no such folder`);
        if (!folder.isDirectory()) throw new ModelLoadError(`${this.location}: a file, not a model folder`);
        if (code === 'ENOENT') return null;
      }
      throw new ModelLoadError(`cannot read ${full}: ${(e as Error).message}`);
    }
  }
}

/**
 * `hf:org/name[@rev]` → the hub (`hub` options: endpoint, token, cache); `http(s)://…` → that URL; anything else is
 * a folder: a path in Node (unless a `base` URL is given), a URL relative to `base` (default: the page) in the
 * browser. `onWarning` hears what does not stop a load (offline, cache full).
 */
export function resolveSource(
  spec: string,
  base?: string,
  hub: HubOptions = {},
  onWarning?: (message: string) => void,
): FileSource {
  const ref = parseHubId(spec);
  if (ref) return new HubSource(ref.repo, ref.revision, hub, onWarning);
  if (/^https?:\/\//.test(spec)) return new HttpSource(spec);
  if (isNode && base === undefined && !/^[a-z]+:/.test(spec)) return new FsSource(spec);
  const root = base ?? (typeof document !== 'undefined' ? document.baseURI : globalThis.location?.href);
  if (!root) throw new ModelLoadError(`cannot resolve model location "${spec}": no base URL`);
  return new HttpSource(new URL(spec, root).href);
}

/** Per-file and overall (`progress_total`) progress of one model's load, in transformers.js's shape. */
export class LoadProgress {
  private readonly files: Record<string, { loaded: number; total: number }> = {};

  constructor(
    readonly name: string,
    private readonly callback?: ProgressCallback,
  ) {}

  /** A file that will be read, with its size when known: counted in the total from now on. */
  expect(file: string, size: number | undefined): void {
    if (size !== undefined && !this.files[file]) this.files[file] = { loaded: 0, total: size };
  }

  emit(info: Omit<ProgressInfo, 'name'>): void {
    const cb = this.callback;
    if (!cb) return;
    const event = { name: this.name, ...info };
    if (info.status === 'progress' && info.file) {
      this.files[info.file] = { loaded: info.loaded ?? 0, total: info.total ?? info.loaded ?? 0 };
      let loaded = 0;
      let total = 0;
      for (const f of Object.values(this.files)) {
        loaded += f.loaded;
        total += f.total;
      }
      cb({
        status: 'progress_total',
        name: this.name,
        loaded,
        total,
        progress: total > 0 ? (100 * loaded) / total : 0,
        files: structuredClone(this.files),
      });
    }
    cb(event);
  }

  warn(message: string, file?: string): void {
    this.callback?.({ status: 'warning', name: this.name, message, ...(file ? { file } : {}) });
  }
}

/** A file with transformers.js-style progress events, or null when it does not exist. */
export async function readOptional(
  source: FileSource,
  file: string,
  progress?: LoadProgress,
): Promise<Uint8Array | null> {
  progress?.emit({ status: 'initiate', file });
  const bytes = await source.read(file, {
    progress: (loaded, total) =>
      progress?.emit({
        status: 'progress',
        file,
        loaded,
        ...(total ? { total, progress: (100 * loaded) / total } : {}),
      }),
    download: () => progress?.emit({ status: 'download', file }),
    warning: (message) => progress?.warn(message, file),
  });
  if (bytes) progress?.emit({ status: 'done', file });
  return bytes;
}

export async function readRequired(source: FileSource, file: string, progress?: LoadProgress): Promise<Uint8Array> {
  const bytes = await readOptional(source, file, progress);
  if (!bytes) throw new ModelLoadError(`missing file: ${file} not found in ${source.location}`);
  return bytes;
}

export async function readJson(
  source: FileSource,
  file: string,
  required: true,
  progress?: LoadProgress,
): Promise<Record<string, unknown>>;
export async function readJson(
  source: FileSource,
  file: string,
  required: false,
  progress?: LoadProgress,
): Promise<Record<string, unknown> | null>;
export async function readJson(source: FileSource, file: string, required: boolean, progress?: LoadProgress) {
  const text = required ? await readText(source, file, true, progress) : await readText(source, file, false, progress);
  return text === null ? null : parseJsonObject(text, file, source.location);
}

/** A file's text (UTF-8), or null when an optional file is absent. */
export async function readText(
  source: FileSource,
  file: string,
  required: true,
  progress?: LoadProgress,
): Promise<string>;
export async function readText(
  source: FileSource,
  file: string,
  required: false,
  progress?: LoadProgress,
): Promise<string | null>;
export async function readText(source: FileSource, file: string, required: boolean, progress?: LoadProgress) {
  const bytes = required ? await readRequired(source, file, progress) : await readOptional(source, file, progress);
  return bytes ? new TextDecoder().decode(bytes) : null;
}

/** A JSON file's text parsed, which must hold an object; errors name the file and where it is. */
export function parseJsonObject(text: string, file: string, location: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    // V8 quotes the file's first bytes, line breaks included: one line.
    const why = (e as Error).message.replace(/\s+/g, ' ');
    throw new ModelLoadError(`${file} in ${location} is not valid JSON: ${why}`);
  }
  // null, a number or a list parsed fine and failed later with a JavaScript message ("Cannot use 'in' operator").
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    const held = parsed === null ? 'null' : Array.isArray(parsed) ? 'a list' : `a ${typeof parsed}`;
    throw new ModelLoadError(`${file} in ${location} is not a JSON object (it holds ${held})`);
  }
  return parsed as Record<string, unknown>;
}
