/**
 * The Node record file: what one process sets is on disk when set() resolves, what another process wrote is read
 * (the parsed file is kept only while the file is unchanged), values are copies, and a failed write does not hold up
 * the writes after it.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { safeGet, safeSet } from '../engine/store';
import { defaultStorePath, FileStore } from './store-node';

const folder = () => mkdtempSync(join(tmpdir(), 'spec-store-'));
const onDisk = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;

describe('the default record file', () => {
  it('is under SPEC_DECODER_CACHE, else XDG_CACHE_HOME, else ~/.cache; empty or relative values count as unset', () => {
    const home = join(homedir(), '.cache', 'spec-decoder', 'records.json');
    expect(defaultStorePath({})).toBe(home);
    expect(defaultStorePath({ SPEC_DECODER_CACHE: '/c' })).toBe('/c/records.json');
    expect(defaultStorePath({ XDG_CACHE_HOME: '/x' })).toBe('/x/spec-decoder/records.json');
    // An empty value put the file in the working directory; XDG ignores relative paths.
    expect(defaultStorePath({ SPEC_DECODER_CACHE: '' })).toBe(home);
    expect(defaultStorePath({ XDG_CACHE_HOME: '' })).toBe(home);
    expect(defaultStorePath({ XDG_CACHE_HOME: 'rel/cache' })).toBe(home);
  });
});

describe('FileStore.problem', () => {
  it('is null for a file read or not there yet, and says why one there could not be read', async () => {
    const dir = folder();
    const path = join(dir, 'records.json');
    expect(new FileStore(path).problem).toBeNull();
    for (const [content, why] of [
      ['{ broken', 'not valid JSON'],
      ['[1, 2]', 'not a JSON object'],
    ]) {
      writeFileSync(path, content as string);
      expect(new FileStore(path).problem).toBe(
        `${path} could not be read (${why}): what it remembered is measured again`,
      );
    }
    const store = new FileStore(path);
    await store.set('a', 1);
    expect(store.problem).toBeNull();
    const isDir = join(dir, 'dir.json');
    mkdirSync(isDir);
    expect(new FileStore(isDir).problem).toBe(
      `${isDir} could not be read (EISDIR): what it remembered is measured again`,
    );
  });
});

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
    // A file rewritten by hand (or by an older version of this store) is read again too: its values are taken as
    // newer; a record this process set that it lacks was lost to another process's write and is laid back.
    writeFileSync(path, JSON.stringify({ costs: { t1: 9 } }, null, 1));
    expect(await mine.get('costs')).toEqual({ t1: 9 });
    expect(await mine.get('auto')).toEqual({ arms: { chain: 600 } });
  });

  it('two stores on one file in a process lose nothing, and every set() that resolves is on disk', async () => {
    const path = join(folder(), 'records.json');
    const a = new FileStore(path);
    const b = new FileStore(path);
    for (let i = 0; i < 20; i++) {
      const results = await Promise.allSettled([a.set(`a${i}`, i), b.set(`b${i}`, i)]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled']);
    }
    const keys = Object.keys(onDisk(path));
    expect(keys).toHaveLength(40);
  });

  it('a write keeps what another process wrote after set() was called (it wrote the copy it had read)', async () => {
    const path = join(folder(), 'records.json');
    const store = new FileStore(path);
    await store.set('mine', 1);
    const saved = store.set('later', 2);
    // Another process writes the file (with what it read) before this write is made.
    writeFileSync(path, JSON.stringify({ mine: 1, theirs: 3 }));
    await saved;
    expect(onDisk(path)).toEqual({ mine: 1, theirs: 3, later: 2 });
  });

  it("two processes writing one file at once keep each other's records: none is lost for good", async () => {
    const path = join(folder(), 'records.json');
    const store = new URL('./store-node.ts', import.meta.url).pathname;
    const marks = folder();
    // Each writes 150 records while the other does. A write made from a file read just before the other's may drop
    // the other's newest records (how many depends on how long the first was paused between its read and its
    // rename: 11 on a loaded machine); the loser lays them back with its next write. So, once both are done, a
    // writes one more record, then b does once it sees a's: b's read-back must restore whatever a's writes dropped.
    const writer = (tag: string, other: string) =>
      new Promise<number | null>((done) => {
        const code = `const { FileStore } = await import(${JSON.stringify(store)});
          const { existsSync, writeFileSync } = await import('node:fs');
          const wait = async (ok) => { while (!(await ok())) await new Promise((r) => setTimeout(r, 5)); };
          const s = new FileStore(${JSON.stringify(path)});
          for (let i = 0; i < 150; i++) await s.set('${tag}' + i, { i, pad: 'x'.repeat(200) });
          writeFileSync(${JSON.stringify(join(marks, tag))}, '');
          await wait(() => existsSync(${JSON.stringify(join(marks, other))}));
          if ('${tag}' === 'b') await wait(async () => (await s.get('a-last')) !== undefined);
          await s.set('${tag}-last', 1);`;
        const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
          stdio: 'ignore',
        });
        child.on('exit', done);
      });
    expect(await Promise.all([writer('a', 'b'), writer('b', 'a')])).toEqual([0, 0]);
    const keys = new Set(Object.keys(onDisk(path)));
    // Before records were laid back, a re-read dropped a process's own records (108-298 of 600 lost).
    for (const tag of ['a', 'b'])
      expect(Array.from({ length: 150 }, (_, i) => `${tag}${i}`).filter((k) => !keys.has(k))).toEqual([]);
    expect(keys.has('a-last') && keys.has('b-last')).toBe(true);
  }, 60_000);

  it('leaves no temporary file behind: not a failed write, nor one a killed process left', async () => {
    const root = folder();
    const path = join(root, 'records.json');
    const dead = 2 ** 22 + 12345; // above Linux's pid_max by default: no such process
    writeFileSync(join(root, `records.json.${dead}.tmp`), '{"half');
    await new FileStore(path).set('k', 1);
    expect(readdirSync(root).sort()).toEqual(['records.json']);
    // The rename fails (a folder where the file should be): its temporary file goes too.
    const other = join(folder(), 'records.json');
    mkdirSync(join(other, 'inside'), { recursive: true });
    await expect(new FileStore(other).set('k', 1)).rejects.toThrow();
    expect(readdirSync(dirname(other)).sort()).toEqual(['records.json']);
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
