/**
 * Remembered records in Node: one JSON file, by default $XDG_CACHE_HOME/spec-decoder/records.json (or
 * ~/.cache/...; SPEC_DECODER_CACHE overrides the folder). Written whole through a temporary file and a rename, so a
 * crash never leaves half a file; an unreadable file reads as empty.
 *
 * `auto` saves its arms' estimates every few rounds of a generation, so a save must cost the round next to nothing:
 * the file is parsed again only when it changed on disk (another process wrote it), and written in the background
 * (set() resolves once it is on disk; saves made meanwhile are written in order, each with every record set before
 * it). Read, parsed, indented and written synchronously, a save took 0.4 ms of a 5-6 ms round every 8 rounds.
 */
import { readFileSync, statSync } from 'node:fs';
import { mkdir, readdir, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import type { KeyValueStore } from '../engine/store';

/**
 * An empty SPEC_DECODER_CACHE or XDG_CACHE_HOME counts as unset (it put the file in the working directory), and so
 * does a relative XDG_CACHE_HOME (the XDG spec: "all paths ... must be absolute"; others are ignored).
 */
export function defaultStorePath(env: Record<string, string | undefined> = process.env): string {
  const xdg = env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : join(homedir(), '.cache');
  const folder = env.SPEC_DECODER_CACHE || join(xdg, 'spec-decoder');
  return join(folder, 'records.json');
}

type Records = Record<string, unknown>;

/** What identifies one version of the file: its inode (each write is a new file renamed over it), time and size. */
function stampOf(s: { ino: number; mtimeMs: number; size: number }): string {
  return `${s.ino}:${s.mtimeMs}:${s.size}`;
}

/**
 * One file's state in this process, shared by every FileStore on it (two engines each given `new FileStore()` write
 * the same default file): one cache, one write queue. Two stores of their own lost records to each other (both wrote
 * through the same temporary file, and each wrote the file without the other's records).
 */
class SharedFile {
  /** The records as last read or set here, and the stamp of the file they were read from or last written to. */
  cache: { stamp: string | null; records: Records } | null = null;
  /** The writes in order (never rejected: each set() reports its own failure). */
  writing: Promise<void> = Promise.resolve();
  /**
   * Records set here and not yet on disk. A write lays them over the file as it is then (another process's write
   * read back), not over what this process read before: written from a stale copy, one process dropped the other's
   * records, and a re-read dropped its own (two processes at once: 298 and 108 of 600 lost).
   */
  readonly pending = new Map<string, unknown>();
  /**
   * Every record this process set (its latest value): one that a file read back lacks was lost to another process's
   * write made at the same moment from what it had read before, and is laid back (a value there is taken as newer).
   */
  readonly own = new Map<string, unknown>();
  swept = false;
  /** Why the file, there, could not be read as records the last time it was read (null: read, or absent). */
  problem: string | null = null;
  /** Why the latest write failed (null: none has, or a later one succeeded). */
  writeProblem: string | null = null;

  constructor(readonly path: string) {}
}

const files = new Map<string, SharedFile>();

/** Temporary files of this store's writes that a process killed mid-write left behind (its pid no longer runs). */
async function sweepStaleTemps(path: string): Promise<void> {
  const prefix = `${basename(path)}.`;
  let names: string[] = [];
  try {
    names = await readdir(dirname(path));
  } catch {
    return;
  }
  for (const name of names) {
    const m = name.startsWith(prefix) ? /^(\d+)\.tmp$/.exec(name.slice(prefix.length)) : null;
    if (!m || Number(m[1]) === process.pid || alive(Number(m[1]))) continue;
    await unlink(join(dirname(path), name)).catch(() => {});
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class FileStore implements KeyValueStore {
  private readonly file: SharedFile;

  constructor(readonly path: string = defaultStorePath()) {
    const key = resolve(path);
    let file = files.get(key);
    if (!file) {
      file = new SharedFile(path);
      files.set(key, file);
    }
    this.file = file;
  }

  private currentStamp(): string | null {
    try {
      return stampOf(statSync(this.path));
    } catch {
      return null;
    }
  }

  private readAll(): Records {
    const file = this.file;
    const stamp = this.currentStamp();
    if (file.cache && file.cache.stamp === stamp) return file.cache.records;
    let records: Records = {};
    file.problem = null;
    let text: string | null = null;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (e) {
      // Absent: empty, nothing to say. Unreadable (a folder there, no permission): empty, and said.
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') file.problem = code ?? (e as Error).message;
    }
    if (text !== null) {
      try {
        const data = JSON.parse(text);
        if (data && typeof data === 'object' && !Array.isArray(data)) records = data as Records;
        else file.problem = 'not a JSON object';
      } catch {
        file.problem = 'not valid JSON';
      }
    }
    for (const [key, value] of file.own) if (!(key in records)) records[key] = value;
    for (const [key, value] of file.pending) records[key] = value;
    file.cache = { stamp, records };
    return records;
  }

  /**
   * Why the records file could not be read, as a line to show (null: read, or not there yet): what it held is then
   * lost, and choices and measurements are made afresh (the next save writes a new file).
   */
  get problem(): string | null {
    this.readAll();
    const why = this.file.problem;
    return why ? `${this.path} could not be read (${why}): what it remembered is measured again` : null;
  }

  /**
   * Why what was set could not be written, as a line to show (null: written, or nothing to write): it is measured
   * again next time. Read it once the writes are done (settled()).
   */
  get writeProblem(): string | null {
    const why = this.file.writeProblem;
    return why
      ? `${this.path} could not be written (${why}): what this run measured is measured again next time`
      : null;
  }

  /** Once every write set so far has been tried. */
  async settled(): Promise<void> {
    await this.file.writing;
  }

  async get(key: string): Promise<unknown> {
    const value = this.readAll()[key];
    // A copy, as a fresh parse of the file would give: the caller may change it.
    return value === undefined ? undefined : structuredClone(value);
  }

  async set(key: string, value: unknown): Promise<void> {
    const file = this.file;
    // Taken as it is now (the caller may change its object later), and checked to be JSON now.
    const copy = JSON.parse(JSON.stringify(value));
    file.pending.set(key, copy);
    file.own.set(key, copy);
    this.readAll()[key] = copy;
    const write = async () => {
      if (!file.pending.has(key)) return; // an earlier write took it (with every record set before it)
      await mkdir(dirname(this.path), { recursive: true });
      if (!file.swept) {
        file.swept = true;
        await sweepStaleTemps(this.path);
      }
      // The file as it is now, with what is pending laid over it.
      const records = this.readAll();
      const taken = new Map(file.pending);
      file.pending.clear();
      const text = JSON.stringify(records);
      const temp = `${this.path}.${process.pid}.tmp`;
      let written: string;
      try {
        await writeFile(temp, text);
        // The stamp of the file written, taken before the rename: taken after it, another process's file renamed in
        // between passed for this one's, its records were never read back, and this process's writes dropped them.
        written = stampOf(await stat(temp));
        await rename(temp, this.path);
      } catch (e) {
        await unlink(temp).catch(() => {}); // never left behind
        for (const [k, v] of taken) if (!file.pending.has(k)) file.pending.set(k, v); // written next time
        throw e;
      }
      // Ours, unless another process wrote in between: then its file is read back next, and what this write held
      // may be lost to it (last writer wins, in that moment only).
      if (file.cache?.records === records) file.cache.stamp = written;
      file.problem = null; // a readable file is there now
      file.writeProblem = null;
    };
    // Any step that fails (the folder cannot be made, the file cannot be written or renamed) is why this write failed.
    const job = file.writing.then(write).catch((e: unknown) => {
      file.writeProblem = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
      throw e;
    });
    file.writing = job.catch(() => {});
    await job;
  }
}
