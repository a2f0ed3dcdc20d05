/**
 * The disk cache's writes when the disk fails them: the partial file is removed, whatever failed. The failure is a
 * writeFile that puts part of the bytes on disk and then throws ENOSPC, as a full disk does.
 */
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DownloadError } from '../errors';
import type { RepoInfo } from './info';
import { NodeHubStore } from './store-node';

const failWrites = { on: false };

vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs/promises')>();
  const writeFile: typeof real.writeFile = async (file, data, options) => {
    if (!failWrites.on || !(data instanceof Uint8Array)) return real.writeFile(file, data, options);
    await real.writeFile(file, data.subarray(0, data.byteLength >> 1));
    throw Object.assign(new Error(`ENOSPC: no space left on device, write`), { code: 'ENOSPC' });
  };
  return { ...real, writeFile, default: { ...real, writeFile } };
});

afterEach(() => {
  failWrites.on = false;
});

const commit = 'a'.repeat(40);
const etag = 'b'.repeat(64);
const info: RepoInfo = {
  repo: 'test/full-disk',
  revision: 'main',
  commit,
  files: { 'model.safetensors': { size: 4096, etag, sha256: etag }, 'config.json': { size: 4096 } },
  gated: false,
};

describe('NodeHubStore.write on a full disk', () => {
  it('an LFS blob: the error names the file and the .incomplete partial is gone from blobs/', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spec-hub-full-'));
    const store = await NodeHubStore.open(dir);
    failWrites.on = true;
    const err = await store.write('', info, 'model.safetensors', new Uint8Array(4096)).catch((e) => e);
    expect(err).toBeInstanceOf(DownloadError);
    expect(err.message).toBe(`could not keep model.safetensors in ${dir}: ENOSPC: no space left on device, write`);
    expect(readdirSync(join(dir, 'models--test--full-disk', 'blobs'))).toEqual([]);
    expect(await store.read('', info, 'model.safetensors')).toBeNull();
  });

  it('a file without an ETag (written in place): the partial file is gone too', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spec-hub-full-'));
    const store = await NodeHubStore.open(dir);
    failWrites.on = true;
    await expect(store.write('', info, 'config.json', new Uint8Array(4096))).rejects.toThrow(/ENOSPC/);
    expect(existsSync(join(dir, 'models--test--full-disk', 'snapshots', commit, 'config.json'))).toBe(false);
  });
});

describe('NodeHubStore.loadInfo', () => {
  it('an empty or damaged ref names no commit: the revision reads as not cached', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spec-hub-ref-'));
    const store = await NodeHubStore.open(dir);
    await store.saveInfo('', { ...info, files: { 'config.json': { size: 2 } } });
    await store.write('', info, 'config.json', new TextEncoder().encode('{}'));
    expect((await store.loadInfo('', info.repo, 'main'))?.commit).toBe(commit);
    for (const ref of ['', '\n', 'not-a-commit'].values()) {
      writeFileSync(join(dir, 'models--test--full-disk', 'refs', 'main'), ref);
      expect(await store.loadInfo('', info.repo, 'main')).toBeNull();
    }
  });
});
