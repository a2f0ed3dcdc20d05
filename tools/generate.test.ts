/**
 * `npm run generate` as the README runs it (tools/bootstrap.mjs generate): the CLI bundled by esbuild into
 * node_modules/.cache and run in the bootstrap's process. It generates, reports errors as the CLI does, and a change
 * under src/ makes a new bundle (never a stale one).
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const cache = join('node_modules', '.cache', 'spec-decoder-cli');
const generate = (...args: string[]) =>
  spawnSync(process.execPath, ['tools/bootstrap.mjs', 'generate', ...args], { encoding: 'utf8' });

describe('npm run generate (the bundled CLI)', () => {
  it('generates, and says what is wrong with bad input in one line with exit status 2', () => {
    const ok = generate('--prompt', 'It is a truth', '--method', 'ar', '--max-new-tokens', '4', '--json');
    expect(ok.status).toBe(0);
    const out = JSON.parse(ok.stdout.trim().split('\n').at(-1) as string) as { tokens: number[]; text: string };
    expect(out.tokens).toHaveLength(4);
    const bad = generate('--prompt', 'x', '--max-new-tokens', 'many');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/^error: .*max-new-tokens/m);
  });

  it('bundles again when a source file changed', () => {
    const touched = join('src', 'cli.ts');
    expect(generate('--help').status).toBe(0);
    const before = readdirSync(cache).filter((f) => f.endsWith('.mjs'));
    const now = new Date();
    utimesSync(touched, now, new Date(now.getTime() + 1000)); // same content, new time: a new bundle
    expect(generate('--help').status).toBe(0);
    const after = readdirSync(cache).filter((f) => f.endsWith('.mjs'));
    expect(after).toHaveLength(1);
    expect(after).not.toEqual(before);
  });
});
