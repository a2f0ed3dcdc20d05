/**
 * A local Hugging Face hub for the tests: a real HTTP server on 127.0.0.1 that serves model folders in the hub's
 * URL layout and speaks the parts of its protocol our loader uses, so the real loading code runs against it in Node
 * (vitest) and in Chromium (Playwright starts it in the test process; the page fetches from it cross-origin).
 *
 *   GET /api/models/<org>/<name>[/revision/<rev>][?blobs=true]   model info: commit sha, files (size, blobId, lfs)
 *   GET|HEAD /<org>/<name>/resolve/<rev>/<file>                  a file: small files answered directly with the
 *        git blob id as ETag; LFS files (*.safetensors, or large) redirected (302) to /cdn-lfs/<sha256> with
 *        X-Linked-Etag / X-Linked-Size; X-Repo-Commit on both
 *   GET|HEAD /cdn-lfs/<sha256>                                   the LFS object (ETag = its sha256)
 *
 * Headers as the hub sends them (ETag, Content-Length, X-Repo-Commit, X-Error-Code / X-Error-Message on errors,
 * CORS with the exposed headers), history kept per commit (old commits stay resolvable), gated repos (401 without
 * the token, 403 with another), and faults switched on per repo/file: 404, 401, 500, a truncated body, a slow body,
 * a corrupt body, and a commit landing on the branch between two requests. Every request is logged.
 *
 * Run standalone: `npx tsx tests/hub/server.ts [--port 8765] org/name=folder …` (e.g. the bundled pair).
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, relative } from 'node:path';

export type Fault =
  /** The file answers 404 EntryNotFound (the repo answers 401 RepoNotFound when no file is named). */
  | { kind: 'not-found' }
  /** 401 GatedRepo, as for a gated model without an accepted licence. */
  | { kind: 'gated' }
  | { kind: 'server-error' }
  /** The full Content-Length is announced, then the connection is cut after `bytes` (default: half). */
  | { kind: 'truncate'; bytes?: number }
  /** The body is sent in `chunk`-byte pieces every `delayMs`. */
  | { kind: 'slow'; chunk?: number; delayMs?: number }
  /** Same length, different bytes (a broken mirror or CDN). */
  | { kind: 'corrupt' }
  /** Before answering, a new commit changing this file lands on the branch (the request itself is unaffected). */
  | { kind: 'change' };

export interface FaultRule {
  repo?: string;
  /** A file name, or 'info' for the model-info API. Any file when absent. */
  file?: string;
  fault: Fault;
  /** How many requests it applies to (default: all). */
  times?: number;
}

export interface LoggedRequest {
  method: string;
  path: string;
  status: number;
  /** Body bytes written (0 for HEAD, 304, redirects and errors without a body). */
  bytes: number;
  authorization: string | null;
}

interface StoredFile {
  bytes: Uint8Array;
  /** Git blob id (sha1 of "blob <n>\0" + bytes), the hub's ETag for regular files. */
  blobId: string;
  sha256: string;
  lfs: boolean;
}

interface Repo {
  gated: boolean;
  /** Branch and tag names to commit shas. */
  refs: Map<string, string>;
  commits: Map<string, Map<string, StoredFile>>;
}

const EXPOSED = [
  'ETag',
  'X-Repo-Commit',
  'X-Linked-Etag',
  'X-Linked-Size',
  'X-Error-Code',
  'X-Error-Message',
  'X-Request-Id',
  'Content-Length',
  'Content-Range',
  'Accept-Ranges',
].join(', ');

const LFS_THRESHOLD = 10 * 1024 * 1024;

const sha = (algo: 'sha1' | 'sha256', ...parts: (string | Uint8Array)[]) => {
  const h = createHash(algo);
  for (const p of parts) h.update(p);
  return h.digest('hex');
};

function storedFile(name: string, bytes: Uint8Array): StoredFile {
  return {
    bytes,
    blobId: sha('sha1', `blob ${bytes.byteLength}\0`, bytes),
    sha256: sha('sha256', bytes),
    lfs: name.endsWith('.safetensors') || bytes.byteLength >= LFS_THRESHOLD,
  };
}

/** Every file under a folder, by its path relative to the folder. */
export function readFolder(folder: string): Record<string, Uint8Array> {
  const out: Record<string, Uint8Array> = {};
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir)) {
      const full = join(dir, entry);
      if (statSync(full).isDirectory()) walk(full);
      else out[relative(folder, full).split('\\').join('/')] = new Uint8Array(readFileSync(full));
    }
  };
  walk(folder);
  return out;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class TestHub {
  readonly requests: LoggedRequest[] = [];
  private readonly repos = new Map<string, Repo>();
  private rules: FaultRule[] = [];
  private commitCounter = 0;

  private constructor(
    private readonly server: Server,
    /** The endpoint, e.g. http://127.0.0.1:41234 (what HF_ENDPOINT or the hub-endpoint option takes). */
    readonly url: string,
    /** The token that opens gated repos. */
    readonly token: string,
  ) {}

  static async start(options: { port?: number; token?: string } = {}): Promise<TestHub> {
    let hub: TestHub | undefined;
    const server = createServer((req, res) => {
      hub?.handle(req, res).catch((e) => {
        if (!res.headersSent) res.writeHead(500);
        res.end(String(e));
      });
    });
    await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    hub = new TestHub(server, `http://127.0.0.1:${port}`, options.token ?? 'hf_test_token');
    return hub;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  /** Serve `files` (or a folder) as repo `id` on branch `branch`; returns the new commit sha. */
  addRepo(
    id: string,
    files: string | Record<string, Uint8Array>,
    options: { gated?: boolean; branch?: string } = {},
  ): string {
    const contents = typeof files === 'string' ? readFolder(files) : files;
    const repo: Repo = this.repos.get(id) ?? { gated: false, refs: new Map(), commits: new Map() };
    repo.gated = options.gated ?? repo.gated;
    this.repos.set(id, repo);
    const tree = new Map(Object.entries(contents).map(([name, bytes]) => [name, storedFile(name, bytes)]));
    return this.commit(repo, options.branch ?? 'main', tree);
  }

  /** A new commit on `branch` with `file` replaced; returns its sha. */
  updateFile(id: string, file: string, bytes: Uint8Array, branch = 'main'): string {
    const repo = this.repoOrThrow(id);
    const head = repo.commits.get(repo.refs.get(branch) ?? '') ?? new Map<string, StoredFile>();
    const tree = new Map(head);
    tree.set(file, storedFile(file, bytes));
    return this.commit(repo, branch, tree);
  }

  /** Point a tag or branch at an existing commit. */
  tag(id: string, name: string, commit: string): void {
    const repo = this.repoOrThrow(id);
    if (!repo.commits.has(commit)) throw new Error(`test hub: no commit ${commit} in ${id}`);
    repo.refs.set(name, commit);
  }

  commitOf(id: string, revision = 'main'): string | undefined {
    return this.repos.get(id)?.refs.get(revision);
  }

  fail(rule: FaultRule): void {
    this.rules.push({ ...rule });
  }

  clearFaults(): void {
    this.rules = [];
  }

  clearLog(): void {
    this.requests.length = 0;
  }

  /** Requests that sent (part of) a file body: resolve or CDN answers with bytes. */
  bodyRequests(): LoggedRequest[] {
    return this.requests.filter((r) => r.bytes > 0 && !r.path.startsWith('/api/'));
  }

  private repoOrThrow(id: string): Repo {
    const repo = this.repos.get(id);
    if (!repo) throw new Error(`test hub: no repo ${id}`);
    return repo;
  }

  private commit(repo: Repo, branch: string, tree: Map<string, StoredFile>): string {
    const parent = repo.refs.get(branch) ?? '';
    const lines = [...tree].map(([name, f]) => `${name} ${f.blobId}`).sort();
    const commit = sha('sha1', parent, '\n', String(++this.commitCounter), '\n', lines.join('\n'));
    repo.commits.set(commit, tree);
    repo.refs.set(branch, commit);
    return commit;
  }

  private takeFault(repo: string | undefined, file: string | undefined): Fault | null {
    const rule = this.rules.find(
      (r) =>
        !r.repo?.startsWith('lfs:') &&
        (r.repo === undefined || r.repo === repo) &&
        (r.file === undefined ? file !== 'info' : r.file === file) &&
        (r.times === undefined || r.times > 0),
    );
    if (!rule) return null;
    if (rule.times !== undefined) rule.times--;
    return rule.fault;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const path = decodeURIComponent(url.pathname);
    const entry: LoggedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname + url.search,
      status: 0,
      bytes: 0,
      authorization: req.headers.authorization ?? null,
    };
    this.requests.push(entry);
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Access-Control-Expose-Headers', EXPOSED);
    res.setHeader('Cross-Origin-Resource-Policy', 'cross-origin');
    const answer = (status: number, headers: Record<string, string | number> = {}, body?: Uint8Array | string) => {
      entry.status = status;
      const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body;
      res.writeHead(status, { ...headers, ...(bytes ? { 'Content-Length': bytes.byteLength } : {}) });
      if (bytes && req.method !== 'HEAD') {
        entry.bytes = bytes.byteLength;
        res.end(bytes);
      } else res.end();
    };
    const error = (status: number, code: string, message: string) =>
      answer(
        status,
        { 'Content-Type': 'application/json', 'X-Error-Code': code, 'X-Error-Message': message },
        JSON.stringify({ error: message }),
      );

    if (req.method === 'OPTIONS') {
      return answer(204, {
        'Access-Control-Allow-Methods': 'GET, HEAD, OPTIONS',
        'Access-Control-Allow-Headers': 'Authorization, Range, If-None-Match, Content-Type',
        'Access-Control-Max-Age': 600,
      });
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return answer(405);

    const cdn = /^\/cdn-lfs\/([0-9a-f]{64})$/.exec(path);
    if (cdn) return this.serveLfs(cdn[1] as string, url, req, res, entry);

    // Repo ids are org/name, or name alone as the hub's oldest models have them (gpt2).
    const info = /^\/api\/models\/((?:[\w.-]+\/)?[\w.-]+)(?:\/revision\/(.+))?$/.exec(path);
    const resolve = /^\/((?:[\w.-]+\/)?[\w.-]+)\/resolve\/([^/]+)\/(.+)$/.exec(path);
    const repoId = info?.[1] ?? resolve?.[1];
    if (!repoId) return answer(404, { 'Content-Type': 'text/plain' }, 'Not Found');
    const repo = this.repos.get(repoId);
    const file = info ? 'info' : (resolve?.[3] as string);
    const fault = this.takeFault(repoId, file);

    if (!repo) {
      return error(401, 'RepoNotFound', `Repository not found: ${repoId}`);
    }
    const revision = (info ? info[2] : resolve?.[2]) ?? 'main';
    const commit = repo.refs.get(revision) ?? (repo.commits.has(revision) ? revision : undefined);
    if (!commit) return error(404, 'RevisionNotFound', `Invalid rev id: ${revision}`);
    const tree = repo.commits.get(commit) as Map<string, StoredFile>;

    if (info) {
      if (fault?.kind === 'server-error') return answer(500, { 'Content-Type': 'text/plain' }, 'Internal Error');
      if (fault?.kind === 'not-found') return error(401, 'RepoNotFound', `Repository not found: ${repoId}`);
      const blobs = url.searchParams.get('blobs') === 'true';
      const body = {
        id: repoId,
        modelId: repoId,
        sha: commit,
        gated: repo.gated ? 'manual' : false,
        private: false,
        siblings: [...tree].map(([rfilename, f]) =>
          blobs
            ? {
                rfilename,
                size: f.bytes.byteLength,
                blobId: f.blobId,
                ...(f.lfs ? { lfs: { sha256: f.sha256, size: f.bytes.byteLength, pointerSize: 134 } } : {}),
              }
            : { rfilename },
        ),
      };
      return answer(200, { 'Content-Type': 'application/json', 'X-Repo-Commit': commit }, JSON.stringify(body));
    }

    if (repo.gated || fault?.kind === 'gated') {
      const auth = req.headers.authorization;
      const message = `Access to model ${repoId} is restricted. You must have access to it and be authenticated to access it. Please log in.`;
      if (!auth) return error(401, 'GatedRepo', message);
      if (auth !== `Bearer ${this.token}` || fault?.kind === 'gated') return error(403, 'GatedRepo', message);
    }
    if (fault?.kind === 'server-error') return answer(500, { 'Content-Type': 'text/plain' }, 'Internal Error');
    const stored = tree.get(file);
    if (!stored || fault?.kind === 'not-found') {
      return error(404, 'EntryNotFound', `${file} does not exist on "${revision}"`);
    }
    if (fault?.kind === 'change') {
      const changed = new Uint8Array(stored.bytes);
      changed[changed.length - 1] = (changed[changed.length - 1] as number) ^ 0xff;
      for (const [branch, head] of [...repo.refs]) if (head === commit) this.updateFile(repoId, file, changed, branch);
    }
    const common = { 'X-Repo-Commit': commit, 'Accept-Ranges': 'bytes' };
    if (stored.lfs) {
      if (fault) this.rules.unshift({ repo: `lfs:${stored.sha256}`, fault, times: 1 });
      return answer(302, {
        ...common,
        Location: `${this.url}/cdn-lfs/${stored.sha256}`,
        ETag: `"${stored.blobId}"`,
        'X-Linked-Etag': `"${stored.sha256}"`,
        'X-Linked-Size': stored.bytes.byteLength,
      });
    }
    return this.sendBody(req, res, entry, stored, fault, { ...common, ETag: `"${stored.blobId}"` });
  }

  private async serveLfs(
    sha256: string,
    _url: URL,
    req: IncomingMessage,
    res: ServerResponse,
    entry: LoggedRequest,
  ): Promise<void> {
    let found: StoredFile | undefined;
    for (const repo of this.repos.values())
      for (const tree of repo.commits.values()) for (const f of tree.values()) if (f.sha256 === sha256) found = f;
    if (!found) {
      entry.status = 404;
      res.writeHead(404);
      res.end();
      return;
    }
    // Only the fault its resolve request handed on applies here (general rules were applied there).
    const key = `lfs:${sha256}`;
    const fault = this.rules.find((r) => r.repo === key)?.fault ?? null;
    this.rules = this.rules.filter((r) => r.repo !== key);
    return this.sendBody(req, res, entry, found, fault, { ETag: `"${sha256}"`, 'Accept-Ranges': 'bytes' });
  }

  private async sendBody(
    req: IncomingMessage,
    res: ServerResponse,
    entry: LoggedRequest,
    file: StoredFile,
    fault: Fault | null,
    headers: Record<string, string>,
  ): Promise<void> {
    let bytes = file.bytes;
    const etag = headers.ETag;
    if (etag && req.headers['if-none-match'] === etag) {
      entry.status = 304;
      res.writeHead(304, headers);
      res.end();
      return;
    }
    let status = 200;
    const range = /^bytes=(\d+)-(\d*)$/.exec(String(req.headers.range ?? ''));
    const extra: Record<string, string | number> = {};
    if (range) {
      const start = Number(range[1]);
      const end = range[2] ? Math.min(Number(range[2]), bytes.byteLength - 1) : bytes.byteLength - 1;
      extra['Content-Range'] = `bytes ${start}-${end}/${bytes.byteLength}`;
      bytes = bytes.subarray(start, end + 1);
      status = 206;
    }
    if (fault?.kind === 'corrupt') {
      bytes = new Uint8Array(bytes);
      bytes[bytes.length >> 1] = (bytes[bytes.length >> 1] as number) ^ 0x5a;
    }
    entry.status = status;
    res.writeHead(status, {
      ...headers,
      ...extra,
      'Content-Type': 'application/octet-stream',
      'Content-Length': bytes.byteLength,
    });
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    if (fault?.kind === 'truncate') {
      const cut = fault.bytes ?? bytes.byteLength >> 1;
      entry.bytes = cut;
      res.write(bytes.subarray(0, cut));
      await sleep(20);
      res.destroy();
      return;
    }
    if (fault?.kind === 'slow') {
      const chunk = fault.chunk ?? 256 * 1024;
      for (let at = 0; at < bytes.byteLength; at += chunk) {
        if (res.destroyed) return;
        const piece = bytes.subarray(at, at + chunk);
        entry.bytes += piece.byteLength;
        res.write(piece);
        await sleep(fault.delayMs ?? 20);
      }
      res.end();
      return;
    }
    entry.bytes = bytes.byteLength;
    res.end(bytes);
  }
}

// Standalone: serve folders, e.g. `npx tsx tests/hub/server.ts test/austen-target=public/models/austen-target`.
if (process.argv[1] && /tests[/\\]hub[/\\]server\.[cm]?[jt]s$/.test(process.argv[1])) {
  const args = process.argv.slice(2);
  const portAt = args.indexOf('--port');
  const port = portAt >= 0 ? Number(args.splice(portAt, 2)[1]) : 8765;
  TestHub.start({ port }).then((hub) => {
    for (const arg of args) {
      const [id, folder] = arg.split('=');
      if (!id || !folder) throw new Error(`expected org/name=folder, got ${arg}`);
      console.log(`${id} @ ${hub.addRepo(id, folder)} from ${folder}`);
    }
    console.log(`test hub at ${hub.url} (HF_ENDPOINT=${hub.url}); gated repos open with token ${hub.token}`);
  });
}
