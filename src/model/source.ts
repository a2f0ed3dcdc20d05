/**
 * Where model files come from: a local folder (a URL in the browser, a path in Node) or, when online, a Hugging Face
 * hub repository (`hf:org/name` or `hf:org/name@revision`). Fetches report progress in transformers.js's style.
 */
import { ModelLoadError } from './errors';

export interface ProgressInfo {
  status: 'initiate' | 'progress' | 'done' | 'building' | 'ready';
  /** The model (its spec as given). */
  name: string;
  file?: string;
  loaded?: number;
  total?: number;
  /** 0-100 for 'progress'. */
  progress?: number;
}
export type ProgressCallback = (info: ProgressInfo) => void;

export interface FileSource {
  /** Human-readable location, used in error messages. */
  readonly location: string;
  /** The whole file; `null` when it does not exist (other failures throw ModelLoadError). */
  read(file: string, onProgress?: (loaded: number, total: number | undefined) => void): Promise<Uint8Array | null>;
}

const isNode = typeof process !== 'undefined' && !!process.versions?.node && typeof window === 'undefined';

class HttpSource implements FileSource {
  constructor(readonly location: string) {}

  async read(file: string, onProgress?: (loaded: number, total: number | undefined) => void) {
    const url = new URL(file, this.location.endsWith('/') ? this.location : `${this.location}/`).href;
    let res: Response;
    try {
      res = await fetch(url);
    } catch (e) {
      throw new ModelLoadError(`cannot fetch ${url}: ${(e as Error).message}`);
    }
    if (res.status === 404) return null;
    if (!res.ok) throw new ModelLoadError(`cannot fetch ${url}: HTTP ${res.status} ${res.statusText}`);
    // Single-page-app servers answer unknown paths with index.html: that is a missing file, not a model file.
    if (res.headers.get('content-type')?.includes('text/html') && !file.endsWith('.html')) return null;
    const header = res.headers.get('content-length');
    const total = header ? Number(header) : undefined;
    if (!res.body) return new Uint8Array(await res.arrayBuffer());
    const reader = res.body.getReader();
    const chunks: Uint8Array[] = [];
    let loaded = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      loaded += value.byteLength;
      onProgress?.(loaded, total);
    }
    const out = new Uint8Array(loaded);
    let at = 0;
    for (const c of chunks) {
      out.set(c, at);
      at += c.byteLength;
    }
    return out;
  }
}

class FsSource implements FileSource {
  constructor(readonly location: string) {}

  async read(file: string, onProgress?: (loaded: number, total: number | undefined) => void) {
    const fsName = 'node:fs/promises';
    const pathName = 'node:path';
    const fs = (await import(/* @vite-ignore */ fsName)) as typeof import('node:fs/promises');
    const path = (await import(/* @vite-ignore */ pathName)) as typeof import('node:path');
    const full = path.join(this.location, file);
    try {
      const buf = await fs.readFile(full);
      onProgress?.(buf.byteLength, buf.byteLength);
      return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw new ModelLoadError(`cannot read ${full}: ${(e as Error).message}`);
    }
  }
}

/**
 * `hf:org/name[@rev]` → the hub; `http(s)://…` → that URL; anything else is a folder: a path in Node (unless a
 * `base` URL is given), a URL relative to `base` (default: the page) in the browser.
 */
export function resolveSource(spec: string, base?: string): FileSource {
  const hub = /^hf:([\w.-]+\/[\w.-]+)(?:@([\w.-]+))?$/.exec(spec);
  if (hub) return new HttpSource(`https://huggingface.co/${hub[1]}/resolve/${hub[2] ?? 'main'}/`);
  if (spec.startsWith('hf:'))
    throw new ModelLoadError(`bad hub id "${spec}": expected hf:org/name or hf:org/name@revision`);
  if (/^https?:\/\//.test(spec)) return new HttpSource(spec);
  if (isNode && base === undefined && !/^[a-z]+:/.test(spec)) return new FsSource(spec);
  const root = base ?? (typeof document !== 'undefined' ? document.baseURI : globalThis.location?.href);
  if (!root) throw new ModelLoadError(`cannot resolve model location "${spec}": no base URL`);
  return new HttpSource(new URL(spec, root).href);
}

/** A file with transformers.js-style progress events, or null when it does not exist. */
export async function readOptional(
  source: FileSource,
  file: string,
  name: string,
  onProgress?: ProgressCallback,
): Promise<Uint8Array | null> {
  onProgress?.({ status: 'initiate', name, file });
  const bytes = await source.read(file, (loaded, total) =>
    onProgress?.({
      status: 'progress',
      name,
      file,
      loaded,
      ...(total ? { total, progress: (100 * loaded) / total } : {}),
    }),
  );
  if (bytes) onProgress?.({ status: 'done', name, file });
  return bytes;
}

export async function readRequired(
  source: FileSource,
  file: string,
  name: string,
  onProgress?: ProgressCallback,
): Promise<Uint8Array> {
  const bytes = await readOptional(source, file, name, onProgress);
  if (!bytes) throw new ModelLoadError(`missing file: ${file} not found in ${source.location}`);
  return bytes;
}

export async function readJson(
  source: FileSource,
  file: string,
  name: string,
  required: true,
): Promise<Record<string, unknown>>;
export async function readJson(
  source: FileSource,
  file: string,
  name: string,
  required: false,
): Promise<Record<string, unknown> | null>;
export async function readJson(source: FileSource, file: string, name: string, required: boolean) {
  const bytes = required ? await readRequired(source, file, name) : await source.read(file);
  if (!bytes) return null;
  try {
    return JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
  } catch (e) {
    throw new ModelLoadError(`${file} in ${source.location} is not valid JSON: ${(e as Error).message}`);
  }
}
