/**
 * Loading `hf:` ids through the local test hub (tests/hub/server.ts, a real HTTP server): progress, the disk cache in
 * the hub's layout, revisions, shards, shared downloads, offline use, and one readable error per failure.
 */
import { existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readFolder, TestHub } from '../../../tests/hub/server';
import { SpecEngine } from '../../engine/engine';
import { GREEDY } from '../../engine/sampling';
import { ortForNode } from '../../runtime/ort-node';
import { ModelLoadError } from '../errors';
import { asRole } from '../index';
import { type LoadOptions, loadModel } from '../load';
import { parseSafetensors, writeSafetensors } from '../safetensors';
import type { ProgressInfo } from '../source';
import { randomModel, TINY_CONFIG } from '../testing/random-model';
import { request } from './download';
import { NodeHubStore } from './store-node';

const TARGET = 'public/models/austen-target';
const DRAFT = 'public/models/austen-draft';

let hub: TestHub;

beforeAll(async () => {
  hub = await TestHub.start();
  hub.addRepo('test/austen-target', TARGET);
  hub.addRepo('test/austen-draft', DRAFT);
  hub.addRepo('test/gated', DRAFT, { gated: true });
});
afterAll(() => hub?.close());
afterEach(() => {
  hub.clearFaults();
  hub.clearLog();
});

const freshCache = () => mkdtempSync(join(tmpdir(), 'spec-hub-cache-'));
const options = (cacheDir: string, extra: LoadOptions['hub'] = {}): LoadOptions => ({
  hub: { endpoint: hub.url, cacheDir, ...extra },
});

async function loadError(spec: string, opts: LoadOptions): Promise<string> {
  try {
    await loadModel(spec, opts);
  } catch (e) {
    expect(e).toBeInstanceOf(ModelLoadError);
    return (e as Error).message;
  }
  throw new Error(`loading ${spec} did not fail`);
}

async function greedy(target: string, draft: string, hubOptions?: LoadOptions['hub']): Promise<number[]> {
  const engine = await SpecEngine.load(ortForNode(), {
    target,
    draft,
    device: 'wasm',
    ...(hubOptions ? { hub: hubOptions } : {}),
  });
  try {
    const it = engine.generate('It is a truth universally acknowledged', {
      method: 'dynamic',
      maxNewTokens: 12,
      sampling: GREEDY,
    });
    let step = await it.next();
    while (!step.done) step = await it.next();
    return step.value.tokens;
  } finally {
    await engine.release();
  }
}

describe('hf: ids through the test hub (Node)', () => {
  it('first load downloads with progress and the folder bytes into the hub cache layout; the second downloads nothing', async () => {
    const cacheDir = freshCache();
    const events: ProgressInfo[] = [];
    const model = await loadModel('hf:test/austen-draft', {
      ...options(cacheDir),
      onProgress: (p) => events.push(p),
    });
    const folder = await loadModel(DRAFT);
    const same = (a?: Uint8Array, b?: Uint8Array) => !!a && !!b && Buffer.from(a).equals(Buffer.from(b));
    expect(same(model.files.get('model.safetensors'), folder.files.get('model.safetensors'))).toBe(true);
    const commit = hub.commitOf('test/austen-draft') as string;
    // Every file came from resolve/<commit>/, the LFS file through the CDN redirect.
    const resolved = hub.requests.filter((r) => r.path.includes('/resolve/')).map((r) => r.path);
    expect(resolved.every((p) => p.includes(`/resolve/${commit}/`))).toBe(true);
    expect(hub.requests.some((r) => r.path.startsWith('/cdn-lfs/') && r.bytes > 3_000_000)).toBe(true);
    // transformers.js's progress shape: initiate, download, progress, done per file; progress_total per model.
    const weights = events.filter((e) => e.file === 'model.safetensors').map((e) => e.status);
    expect(weights[0]).toBe('initiate');
    expect(weights).toContain('download');
    expect(weights.at(-1)).toBe('done');
    const totals = events.filter((e) => e.status === 'progress_total');
    expect(totals.at(-1)).toMatchObject({ name: 'hf:test/austen-draft', progress: 100 });
    // Every file of the folder is read.
    expect(totals.at(-1)?.total).toBe(Object.values(readFolder(DRAFT)).reduce((a, b) => a + b.byteLength, 0));
    // The hub's cache layout.
    const repoDir = join(cacheDir, 'models--test--austen-draft');
    expect(readFileSync(join(repoDir, 'refs', 'main'), 'utf8')).toBe(commit);
    const pointer = join(repoDir, 'snapshots', commit, 'model.safetensors');
    expect(lstatSync(pointer).isSymbolicLink()).toBe(true);
    expect(readlinkSync(pointer)).toMatch(/^\.\.\/\.\.\/blobs\/[0-9a-f]{64}$/);

    hub.clearLog();
    const again: ProgressInfo[] = [];
    await loadModel('hf:test/austen-draft', { ...options(cacheDir), onProgress: (p) => again.push(p) });
    expect(again.filter((e) => e.status === 'warning')).toEqual([]);
    expect(hub.bodyRequests()).toEqual([]);
    expect(hub.requests.map((r) => r.path)).toEqual(['/api/models/test/austen-draft/revision/main?blobs=true']);
    expect(again.some((e) => e.status === 'download')).toBe(false);
    expect(again.filter((e) => e.status === 'done')).toHaveLength(5);
  });

  it('the engine on the hub pair generates the same greedy tokens as on the folders', async () => {
    const fromHub = await greedy('hf:test/austen-target', 'hf:test/austen-draft', {
      endpoint: hub.url,
      cacheDir: freshCache(),
    });
    expect(fromHub).toEqual(await greedy(TARGET, DRAFT));
    expect(fromHub).toHaveLength(12);
  });

  it('HF_ENDPOINT, HF_HOME and HF_TOKEN are read in Node', async () => {
    const home = freshCache();
    const saved = { ...process.env };
    process.env.HF_ENDPOINT = hub.url;
    process.env.HF_HOME = home;
    process.env.HF_TOKEN = hub.token;
    delete process.env.HF_HUB_CACHE;
    try {
      await loadModel('hf:test/gated');
      expect(existsSync(join(home, 'hub', 'models--test--gated', 'refs', 'main'))).toBe(true);
      expect(hub.requests.filter((r) => r.path.includes('/resolve/')).every((r) => r.authorization)).toBe(true);
    } finally {
      for (const k of ['HF_ENDPOINT', 'HF_HOME', 'HF_TOKEN']) delete process.env[k];
      Object.assign(process.env, saved);
    }
  });

  it('an HF_ENDPOINT or endpoint option that is not a URL is one line naming it and the model', async () => {
    const saved = process.env.HF_ENDPOINT;
    process.env.HF_ENDPOINT = 'notaurl';
    try {
      expect(await loadError('hf:test/austen-draft', { hub: { cacheDir: freshCache() } })).toBe(
        'hf:test/austen-draft@main: HF_ENDPOINT "notaurl" is not a URL (expected e.g. https://huggingface.co)',
      );
    } finally {
      if (saved === undefined) delete process.env.HF_ENDPOINT;
      else process.env.HF_ENDPOINT = saved;
    }
    expect(await loadError('hf:test/austen-draft', { hub: { endpoint: 'ftp:/x', cacheDir: freshCache() } })).toBe(
      'hf:test/austen-draft@main: the hub endpoint "ftp:/x" is not an http(s) URL (expected e.g. https://huggingface.co)',
    );
  });

  it('a hub error with the role of the model names the model once, with its revision', async () => {
    const message = await asRole('draft', 'hf:test/nope', () => loadModel('hf:test/nope', options(freshCache()))).then(
      () => 'loaded',
      (e: Error) => e.message,
    );
    expect(message).toMatch(/^draft model hf:test\/nope@main: /);
    expect(message.split('hf:test/nope').length - 1).toBe(1);
  });

  it('revisions: a tag, a commit sha and a branch load their own files; the cache keeps each', async () => {
    const cacheDir = freshCache();
    const files = readFolder(DRAFT);
    const first = hub.addRepo('test/revs', files);
    const config = JSON.parse(new TextDecoder().decode(files['config.json']));
    const second = hub.updateFile(
      'test/revs',
      'config.json',
      new TextEncoder().encode(JSON.stringify({ ...config, max_position_embeddings: 512 })),
    );
    hub.tag('test/revs', 'v1', first);
    expect((await loadModel('hf:test/revs', options(cacheDir))).config.maxPositions).toBe(512);
    expect((await loadModel('hf:test/revs@v1', options(cacheDir))).config.maxPositions).toBe(1024);
    expect((await loadModel(`hf:test/revs@${second}`, options(cacheDir))).config.maxPositions).toBe(512);
    expect(await loadError('hf:test/revs@nope', options(cacheDir))).toMatch(
      /^hf:test\/revs@nope: revision not found \(HTTP 404/,
    );
    const refs = readdirSync(join(cacheDir, 'models--test--revs', 'refs')).sort();
    expect(refs).toEqual(['main', 'v1']);
  });

  it('sharded safetensors with their index, with overall progress over both shards from the start', async () => {
    const base = { ...TINY_CONFIG, vocab_size: 4096 };
    const st = parseSafetensors('model.safetensors', randomModel(base).safetensors);
    const names = [...st.tensors.keys()];
    const weightMap: Record<string, string> = {};
    const files: Record<string, Uint8Array> = {
      'config.json': new TextEncoder().encode(JSON.stringify(base)),
      'tokenizer.json': readFileSync(join(TARGET, 'tokenizer.json')),
    };
    [names.slice(0, 7), names.slice(7)].forEach((shard, i) => {
      const file = `model-0000${i + 1}-of-00002.safetensors`;
      files[file] = writeSafetensors(
        shard.map((name) => {
          const t = st.tensors.get(name) as NonNullable<ReturnType<typeof st.tensors.get>>;
          weightMap[name] = file;
          return { name, dtype: t.dtype, shape: t.shape, data: st.bytes.slice(t.offset, t.offset + t.byteLength) };
        }),
      );
    });
    files['model.safetensors.index.json'] = new TextEncoder().encode(JSON.stringify({ weight_map: weightMap }));
    hub.addRepo('test/sharded', files);
    const totals: ProgressInfo[] = [];
    const model = await loadModel('hf:test/sharded', {
      ...options(freshCache()),
      onProgress: (p) => p.status === 'progress_total' && totals.push(p),
    });
    expect(model.files.size).toBe(2);
    expect(model.weights.size).toBe(20);
    const shardBytes =
      (files['model-00001-of-00002.safetensors']?.byteLength ?? 0) +
      (files['model-00002-of-00002.safetensors']?.byteLength ?? 0);
    const firstShardEvent = totals.find((t) => t.files?.['model-00001-of-00002.safetensors']);
    expect(firstShardEvent?.files?.['model-00002-of-00002.safetensors']).toMatchObject({ loaded: 0 });
    expect(totals.at(-1)?.loaded).toBeGreaterThanOrEqual(shardBytes);
    // No probing: model.safetensors is not in the listing, so it is never requested.
    expect(hub.requests.some((r) => r.path.endsWith('/model.safetensors'))).toBe(false);
  });

  it('identical concurrent loads share one download (hub ids and plain URLs)', async () => {
    const cacheDir = freshCache();
    hub.fail({ repo: 'test/austen-draft', file: 'model.safetensors', fault: { kind: 'slow', chunk: 512 * 1024 } });
    const seen = [0, 0];
    const [a, b] = await Promise.all(
      [0, 1].map((i) =>
        loadModel('hf:test/austen-draft', {
          ...options(cacheDir),
          onProgress: (p) => {
            if (p.status === 'progress' && p.file === 'model.safetensors') seen[i] = p.loaded ?? 0;
          },
        }),
      ),
    );
    expect(a?.files.get('model.safetensors')).toBe(b?.files.get('model.safetensors')); // the very same bytes
    expect(hub.bodyRequests().filter((r) => r.path.startsWith('/cdn-lfs/'))).toHaveLength(1);
    expect(seen[0]).toBe(seen[1]); // both saw the download through to its end
    // A plain URL folder (here the hub's resolve URLs used as a folder) is shared the same way.
    hub.clearLog();
    const folder = `${hub.url}/test/austen-draft/resolve/main/`;
    await Promise.all([loadModel(folder), loadModel(folder)]);
    expect(hub.requests.filter((r) => r.path.endsWith('/config.json'))).toHaveLength(1);
    expect(hub.bodyRequests().filter((r) => r.path.startsWith('/cdn-lfs/'))).toHaveLength(1);
  });

  it('offline: a cached model loads from the cache with a warning; an uncached one says what is missing', async () => {
    const cacheDir = freshCache();
    const id = 'test/offline';
    hub.addRepo(id, DRAFT);
    await loadModel(`hf:${id}`, options(cacheDir));
    const warnings: string[] = [];
    const dead = { hub: { endpoint: 'http://127.0.0.1:9', cacheDir } };
    const model = await loadModel(`hf:${id}`, {
      ...dead,
      onProgress: (p) => p.status === 'warning' && warnings.push(p.message ?? ''),
    });
    expect(model.weights.size).toBeGreaterThan(0);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /^hf:test\/offline@main: cannot reach http:\/\/127\.0\.0\.1:9 .*; using the copy in .* \(commit [0-9a-f]{8}\)$/,
    );
    // A 500 from the hub falls back the same way.
    hub.fail({ repo: id, file: 'info', fault: { kind: 'server-error' } });
    await loadModel(`hf:${id}`, options(cacheDir));
    expect(await loadError('hf:test/austen-target', { hub: { endpoint: 'http://127.0.0.1:9', cacheDir } })).toMatch(
      /^hf:test\/austen-target@main: cannot reach http:\/\/127\.0\.0\.1:9 \(/,
    );
  });
});

describe('every failure has its own readable error, and nothing broken is cached', () => {
  it('repository not found, file not found, gated (no token, wrong token), server error', async () => {
    const cacheDir = freshCache();
    expect(await loadError('hf:test/no-such-model', options(cacheDir))).toMatch(
      /^hf:test\/no-such-model@main: repository not found at http:\/\/127\.0\.0\.1:\d+ \(HTTP 401 Unauthorized\); check the id, or pass a token if it is private$/,
    );
    hub.fail({ repo: 'test/austen-draft', file: 'tokenizer.json', fault: { kind: 'not-found' } });
    expect(await loadError('hf:test/austen-draft', options(cacheDir))).toMatch(
      /^hf:test\/austen-draft@main: tokenizer\.json: not found \(HTTP 404 Not Found\)$/,
    );
    hub.clearFaults();
    expect(await loadError('hf:test/gated', options(cacheDir))).toMatch(
      /^hf:test\/gated@main: config\.json: the model is gated \(HTTP 401 Unauthorized\): accept its licence on http:\/\/127\.0\.0\.1:\d+\/test\/gated and pass an access token \(HF_TOKEN in Node, the token option in the browser\)$/,
    );
    expect(await loadError('hf:test/gated', options(cacheDir, { token: 'hf_wrong' }))).toMatch(
      /^hf:test\/gated@main: config\.json: the model is gated and this token has no access \(HTTP 403 Forbidden\)/,
    );
    await loadModel('hf:test/gated', options(cacheDir, { token: hub.token }));
    hub.fail({ repo: 'test/austen-draft', file: 'model.safetensors', fault: { kind: 'server-error' } });
    expect(await loadError('hf:test/austen-draft', options(cacheDir))).toMatch(
      /^hf:test\/austen-draft@main: model\.safetensors: the hub failed \(HTTP 500 Internal Server Error\); try again later$/,
    );
    const missing = hub.addRepo('test/no-config', { 'tokenizer.json': readFileSync(join(DRAFT, 'tokenizer.json')) });
    expect(missing).toMatch(/^[0-9a-f]{40}$/);
    expect(await loadError('hf:test/no-config', options(cacheDir))).toMatch(
      /^missing file: config\.json not found in hf:test\/no-config@main on http:/,
    );
  });

  it('a truncated download and a corrupt one fail by name and are never cached; the next load downloads', async () => {
    const cacheDir = freshCache();
    const blobs = () => readdirSync(join(cacheDir, 'models--test--austen-draft', 'blobs'));
    hub.fail({ repo: 'test/austen-draft', file: 'model.safetensors', fault: { kind: 'truncate' }, times: 1 });
    expect(await loadError('hf:test/austen-draft', options(cacheDir))).toMatch(
      /^hf:test\/austen-draft@main: model\.safetensors: download cut off after \d+ of \d+ bytes \(.+\); nothing was cached, try again$/,
    );
    expect(blobs().some((b) => b.length === 64)).toBe(false); // the small files are there, the LFS blob is not
    hub.fail({ repo: 'test/austen-draft', file: 'model.safetensors', fault: { kind: 'corrupt' }, times: 1 });
    expect(await loadError('hf:test/austen-draft', options(cacheDir))).toMatch(
      /^hf:test\/austen-draft@main: model\.safetensors: the downloaded bytes do not match the hub's checksum \(sha256 [0-9a-f]{12}… expected, [0-9a-f]{12}… received\); nothing was cached, try again$/,
    );
    expect(blobs().some((b) => b.length === 64)).toBe(false);
    expect(blobs().some((b) => b.includes('incomplete'))).toBe(false);
    hub.clearLog();
    await loadModel('hf:test/austen-draft', options(cacheDir));
    expect(hub.bodyRequests().map((r) => r.path.split('/')[1])).toEqual(['cdn-lfs']);
    expect(blobs().filter((b) => b.length === 64)).toHaveLength(1);
  });

  it('a file changed on the branch mid-load: the load stays on its commit; the next load revalidates by ETag', async () => {
    const cacheDir = freshCache();
    const id = 'test/changing';
    const before = hub.addRepo(id, DRAFT);
    const original = readFileSync(join(DRAFT, 'model.safetensors'));
    hub.fail({ repo: id, file: 'model.safetensors', fault: { kind: 'change' }, times: 1 });
    const first = await loadModel(`hf:${id}`, options(cacheDir));
    expect(Buffer.from(first.files.get('model.safetensors') as Uint8Array).equals(original)).toBe(true);
    const after = hub.commitOf(id);
    expect(after).not.toBe(before);
    hub.clearLog();
    const second = await loadModel(`hf:${id}`, options(cacheDir));
    expect(Buffer.from(second.files.get('model.safetensors') as Uint8Array).equals(original)).toBe(false);
    // Only the changed file's body was downloaded; the others matched their ETags in the cache.
    expect(hub.bodyRequests().map((r) => r.path.split('/')[1])).toEqual(['cdn-lfs']);
    const store = await NodeHubStore.open(cacheDir);
    expect((await store.list()).find((r) => r.repo === id)?.files).toHaveLength(6);
  });

  it('a slow body reports steady progress', async () => {
    hub.fail({ repo: 'test/austen-draft', file: 'model.safetensors', fault: { kind: 'slow', chunk: 256 * 1024 } });
    const loaded: number[] = [];
    await loadModel('hf:test/austen-draft', {
      ...options(freshCache()),
      onProgress: (p) => p.status === 'progress' && p.file === 'model.safetensors' && loaded.push(p.loaded ?? 0),
    });
    expect(loaded.length).toBeGreaterThanOrEqual(10);
    expect(loaded).toEqual([...loaded].sort((a, b) => a - b));
    expect(loaded.at(-1)).toBe(readFileSync(join(DRAFT, 'model.safetensors')).byteLength);
  });
});

describe('the disk cache', () => {
  it('lists what is stored with sizes, and clears one repo or all', async () => {
    const cacheDir = freshCache();
    await loadModel('hf:test/austen-draft', options(cacheDir));
    await loadModel('hf:test/gated', options(cacheDir, { token: hub.token }));
    const store = await NodeHubStore.open(cacheDir);
    const listed = await store.list();
    expect(listed.map((r) => r.repo).sort()).toEqual(['test/austen-draft', 'test/gated']);
    const size = Object.values(readFolder(DRAFT)).reduce((a, b) => a + b.byteLength, 0);
    expect(listed.find((r) => r.repo === 'test/austen-draft')?.bytes).toBe(size);
    expect(await store.clear('test/gated')).toEqual({ files: 5, bytes: size });
    expect((await store.list()).map((r) => r.repo)).toEqual(['test/austen-draft']);
    await store.clear();
    expect(await store.list()).toEqual([]);
    hub.clearLog();
    await loadModel('hf:test/austen-draft', options(cacheDir));
    expect(hub.bodyRequests()).toHaveLength(5);
  });

  it('an id without an organisation (hf:gpt2-style) loads, is cached as models--<name>, and is listed', async () => {
    hub.addRepo('austen-solo', DRAFT);
    const cacheDir = freshCache();
    const model = await loadModel('hf:austen-solo', options(cacheDir));
    expect(model.config.numLayers).toBe((await loadModel(DRAFT)).config.numLayers);
    const commit = hub.commitOf('austen-solo') as string;
    expect(readFileSync(join(cacheDir, 'models--austen-solo', 'refs', 'main'), 'utf8')).toBe(commit);
    expect((await (await NodeHubStore.open(cacheDir)).list()).map((r) => r.repo)).toEqual(['austen-solo']);
  });
});

/**
 * A hub that accepts connections and then goes quiet: `silent` never answers; anything else is passed on to the test
 * hub, except a path ending in `stallOn`, whose headers and first 10 bytes are sent before it goes quiet.
 */
async function quietHub(stallOn?: string): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer(async (req, res) => {
    const path = req.url ?? '/';
    if (path.startsWith('/silent')) return; // never answered
    const upstream = await fetch(`${hub.url}${path}`, { redirect: 'manual' });
    const body = new Uint8Array(await upstream.arrayBuffer());
    const headers: Record<string, string> = {};
    upstream.headers.forEach((v, k) => {
      if (k !== 'transfer-encoding' && k !== 'connection' && k !== 'keep-alive') headers[k] = v;
    });
    headers['content-length'] = String(body.byteLength);
    res.writeHead(upstream.status, headers);
    if (stallOn && path.endsWith(stallOn))
      res.write(body.subarray(0, 10)); // and never the rest
    else res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = () => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  };
  return { url, close };
}

describe('a hub that accepts connections but does not answer', () => {
  it('no answer to the model info: a cached model loads from the cache with the offline warning; an uncached one is one line', async () => {
    const cacheDir = freshCache();
    hub.addRepo('test/quiet', DRAFT);
    await loadModel('hf:test/quiet', options(cacheDir));
    const quiet = await quietHub();
    try {
      const endpoint = `${quiet.url}/silent`;
      const warnings: string[] = [];
      const started = Date.now();
      const model = await loadModel('hf:test/quiet', {
        hub: { endpoint, cacheDir, timeoutMs: 200 },
        onProgress: (p) => p.status === 'warning' && warnings.push(p.message ?? ''),
      });
      expect(model.weights.size).toBeGreaterThan(0);
      expect(Date.now() - started).toBeLessThan(3000);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(
        /^hf:test\/quiet@main: http:\/\/127\.0\.0\.1:\d+ timed out \(no answer within 0\.2 s\); using the copy in .* \(commit [0-9a-f]{8}\)$/,
      );
      expect(await loadError('hf:test/austen-target', { hub: { endpoint, cacheDir, timeoutMs: 200 } })).toMatch(
        /^hf:test\/austen-target@main: http:\/\/127\.0\.0\.1:\d+ timed out \(no answer within 0\.2 s\)$/,
      );
    } finally {
      await quiet.close();
    }
  }, 10_000);

  it('HF_HUB_DOWNLOAD_TIMEOUT (seconds) sets the timeout in Node; a value that is not a number of seconds is one line', async () => {
    const quiet = await quietHub();
    const saved = process.env.HF_HUB_DOWNLOAD_TIMEOUT;
    try {
      const opts = { hub: { endpoint: `${quiet.url}/silent`, cacheDir: freshCache() } };
      process.env.HF_HUB_DOWNLOAD_TIMEOUT = '0.1';
      expect(await loadError('hf:test/austen-draft', opts)).toMatch(/ timed out \(no answer within 0\.1 s\)$/);
      process.env.HF_HUB_DOWNLOAD_TIMEOUT = 'soon';
      expect(await loadError('hf:test/austen-draft', opts)).toBe(
        'hf:test/austen-draft@main: HF_HUB_DOWNLOAD_TIMEOUT "soon" is not a number of seconds (e.g. 30)',
      );
    } finally {
      if (saved === undefined) delete process.env.HF_HUB_DOWNLOAD_TIMEOUT;
      else process.env.HF_HUB_DOWNLOAD_TIMEOUT = saved;
      await quiet.close();
    }
  }, 10_000);

  it('a body that stops mid-way fails by name once nothing has come for the timeout, and is not cached', async () => {
    const cacheDir = freshCache();
    const quiet = await quietHub('/config.json');
    try {
      expect(
        await loadError('hf:test/austen-draft', { hub: { endpoint: quiet.url, cacheDir, timeoutMs: 200 } }),
      ).toMatch(
        /^hf:test\/austen-draft@main: config\.json: download cut off after 10 of \d+ bytes \(nothing from http:\/\/127\.0\.0\.1:\d+ for 0\.2 s: timed out\); nothing was cached, try again$/,
      );
      const snapshots = join(cacheDir, 'models--test--austen-draft', 'snapshots');
      const commit = readdirSync(snapshots)[0] as string;
      expect(existsSync(join(snapshots, commit, 'config.json'))).toBe(false);
    } finally {
      await quiet.close();
    }
  }, 10_000);

  it("a caller's AbortSignal still ends a request at once, long before the timeout", async () => {
    const quiet = await quietHub();
    try {
      const stop = new AbortController();
      setTimeout(() => stop.abort(), 50);
      const started = Date.now();
      const failed = await request(`${quiet.url}/silent`, { signal: stop.signal }, 'x', 60_000).catch((e) => e);
      expect(failed).toBeInstanceOf(Error);
      expect((failed as Error).message).not.toMatch(/timed out/);
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      await quiet.close();
    }
  }, 10_000);
});
