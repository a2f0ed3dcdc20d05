/**
 * Remembered records in Node: one JSON file, by default $XDG_CACHE_HOME/spec-decoder/records.json (or
 * ~/.cache/...; SPEC_DECODER_CACHE overrides the folder). Written whole through a temporary file and a rename, so a
 * crash never leaves half a file; an unreadable file reads as empty.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import type { KeyValueStore } from '../engine/store';

export function defaultStorePath(env: Record<string, string | undefined> = process.env): string {
  const folder = env.SPEC_DECODER_CACHE ?? join(env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'spec-decoder');
  return join(folder, 'records.json');
}

export class FileStore implements KeyValueStore {
  constructor(readonly path: string = defaultStorePath()) {}

  private readAll(): Record<string, unknown> {
    try {
      const data = JSON.parse(readFileSync(this.path, 'utf8'));
      return data && typeof data === 'object' ? (data as Record<string, unknown>) : {};
    } catch {
      return {};
    }
  }

  async get(key: string): Promise<unknown> {
    return this.readAll()[key];
  }

  async set(key: string, value: unknown): Promise<void> {
    const all = this.readAll();
    all[key] = value;
    mkdirSync(dirname(this.path), { recursive: true });
    const temp = `${this.path}.${process.pid}.tmp`;
    writeFileSync(temp, JSON.stringify(all, null, 1));
    renameSync(temp, this.path);
  }
}
