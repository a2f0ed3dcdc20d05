/**
 * The Node record file: what one process sets is on disk when set() resolves, what another process wrote is read
 * (the parsed file is kept only while the file is unchanged), values are copies, and a failed write does not hold up
 * the writes after it.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { safeGet, safeSet } from '../engine/store';
import { FileStore } from './store-node';

const folder = () => mkdtempSync(join(tmpdir(), 'spec-store-'));
const onDisk = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;

describe('FileStore', () => {
  it('has a record on disk once set() resolves, every record set before it too', async () => {
    const path = join(folder(), 'sub', 'records.json');
    const store = new FileStore(path);
    const first = store.set('a', { n: 1 });
    const second = store.set('b', [2]);
    const third = store.set('a', { n: 3 });
    await third;
    expect(onDisk(path)).toEqual({ a: { n: 3 }, b: [2] });
    await Promise.all([first, second]);
    expect(onDisk(path)).toEqual({ a: { n: 3 }, b: [2] });
  });

  it('reads what another process wrote since (the file changed), and keeps it when it sets a record', async () => {
    const path = join(folder(), 'records.json');
    const mine = new FileStore(path);
    const theirs = new FileStore(path);
    await mine.set('costs', { t1: 2.5 });
    expect(await mine.get('costs')).toEqual({ t1: 2.5 });
    await theirs.set('auto', { arms: { chain: 600 } });
    expect(await mine.get('auto')).toEqual({ arms: { chain: 600 } });
    await mine.set('costs', { t1: 2.4 });
    expect(onDisk(path)).toEqual({ costs: { t1: 2.4 }, auto: { arms: { chain: 600 } } });
    // A file rewritten by hand (or by an older version of this store) is read again too.
    writeFileSync(path, JSON.stringify({ costs: { t1: 9 } }, null, 1));
    expect(await mine.get('costs')).toEqual({ t1: 9 });
    expect(await mine.get('auto')).toBeUndefined();
  });

  it('gives copies: changing a value after set() or after get() changes no record', async () => {
    const store = new FileStore(join(folder(), 'records.json'));
    const value = { arms: { chain: 1 } };
    const saved = store.set('auto', value);
    value.arms.chain = 2;
    await saved;
    const read = (await store.get('auto')) as typeof value;
    expect(read).toEqual({ arms: { chain: 1 } });
    read.arms.chain = 3;
    expect(await store.get('auto')).toEqual({ arms: { chain: 1 } });
  });

  it('reads an unreadable file, or one that is not a JSON object, as empty', async () => {
    const path = join(folder(), 'records.json');
    const store = new FileStore(path);
    writeFileSync(path, '{"half": ');
    expect(await store.get('half')).toBeUndefined();
    writeFileSync(path, '[1, 2]');
    expect(await store.get('0')).toBeUndefined();
    await store.set('k', 1);
    expect(onDisk(path)).toEqual({ k: 1 });
  });

  it('reports a write that fails, and writes again once the cause is gone', async () => {
    const root = folder();
    const blocker = join(root, 'cache');
    writeFileSync(blocker, 'a file where the folder should be');
    const store = new FileStore(join(blocker, 'records.json'));
    await expect(store.set('k', 1)).rejects.toThrow();
    await safeSet(store, 'k', 2); // the engine's way: a store that fails never fails a generation
    rmSync(blocker);
    await store.set('k', 3);
    expect(onDisk(join(blocker, 'records.json'))).toEqual({ k: 3 });
    expect(await safeGet(store, 'k')).toBe(3);
  });
});
