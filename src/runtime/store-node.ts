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
import { mkdir, rename, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import type { KeyValueStore } from '../engine/store';

export function defaultStorePath(env: Record<string, string | undefined> = process.env): string {
  const folder = env.SPEC_DECODER_CACHE ?? join(env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'spec-decoder');
  return join(folder, 'records.json');
}

type Records = Record<string, unknown>;

/** What identifies one version of the file: its modification time and size (null: no file). */
function stampOf(s: { mtimeMs: number; size: number }): string {
  return `${s.mtimeMs}:${s.size}`;
}

export class FileStore implements KeyValueStore {
  /** The records as last read or set here, and the stamp of the file they were read from or last written to. */
  private cache: { stamp: string | null; records: Records } | null = null;
  /** The writes in order (never rejected: each set() reports its own failure). */
  private writing: Promise<void> = Promise.resolve();

  constructor(readonly path: string = defaultStorePath()) {}

  private currentStamp(): string | null {
    try {
      return stampOf(statSync(this.path));
    } catch {
      return null;
    }
  }

  private readAll(): Records {
    const stamp = this.currentStamp();
    if (this.cache && this.cache.stamp === stamp) return this.cache.records;
    let records: Records = {};
    try {
      const data = JSON.parse(readFileSync(this.path, 'utf8'));
      if (data && typeof data === 'object' && !Array.isArray(data)) records = data as Records;
    } catch {
      // Unreadable or absent: empty.
    }
    this.cache = { stamp, records };
    return records;
  }

  async get(key: string): Promise<unknown> {
    const value = this.readAll()[key];
    // A copy, as a fresh parse of the file would give: the caller may change it.
    return value === undefined ? undefined : structuredClone(value);
  }

  async set(key: string, value: unknown): Promise<void> {
    const records = this.readAll();
    // Taken as it is now (the caller may change its object later), and checked to be JSON now.
    records[key] = JSON.parse(JSON.stringify(value));
    const text = JSON.stringify(records);
    const write = async () => {
      await mkdir(dirname(this.path), { recursive: true });
      const temp = `${this.path}.${process.pid}.tmp`;
      await writeFile(temp, text);
      await rename(temp, this.path);
      // Ours, unless another process wrote in between: then the next read parses the file again and this record may
      // be lost to it, as with any last-writer-wins file.
      const written = stampOf(await stat(this.path));
      if (this.cache?.records === records) this.cache.stamp = written;
    };
    const job = this.writing.then(write);
    this.writing = job.catch(() => {});
    await job;
  }
}
