/**
 * `npm run generate` as the README runs it (tools/bootstrap.mjs generate): the CLI bundled by esbuild into
 * node_modules/.cache and run in the bootstrap's process. It generates, reports errors as the CLI does, and a change
 * under src/ makes a new bundle (never a stale one). The tests that look into the bundles' folder use a folder of
 * their own (SPEC_DECODER_CLI_BUNDLE_DIR): other test files run the CLI side by side, and the change under src/ made
 * them bundle again and remove this file's bundle.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { nodeWebGpu } from '../src/runtime/testing/node-webgpu';

// Inside node_modules, where the bundle's imports of packages resolve.
mkdirSync(join('node_modules', '.cache'), { recursive: true });
const cache = mkdtempSync(join('node_modules', '.cache', 'spec-decoder-cli-test-'));
afterAll(() => rmSync(cache, { recursive: true, force: true }));
const generateHere = (...args: string[]) => generateWith({ SPEC_DECODER_CLI_BUNDLE_DIR: cache }, ...args);
const generate = (...args: string[]) =>
  spawnSync(process.execPath, ['tools/bootstrap.mjs', 'generate', ...args], { encoding: 'utf8' });
const generateWith = (env: NodeJS.ProcessEnv, ...args: string[]) =>
  spawnSync(process.execPath, ['tools/bootstrap.mjs', 'generate', ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });

describe('npm run generate (the bundled CLI)', () => {
  it('generates, and says what is wrong with bad input in one line with exit status 2', () => {
    const ok = generate('--prompt', 'It is a truth', '--method', 'ar', '--max-new-tokens', '4', '--json');
    expect(ok.status).toBe(0);
    const out = JSON.parse(ok.stdout) as { tokens: number[]; text: string };
    expect(out.tokens).toHaveLength(4);
    const bad = generate('--prompt', 'x', '--max-new-tokens', 'many');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/^error: .*max-new-tokens/m);
  });

  it.skipIf(!nodeWebGpu.ok)(
    'with --json on WebGPU, stdout is the JSON alone (the adapter goes to stderr)',
    () => {
      const r = generate(
        '--prompt',
        'It is a truth',
        '--method',
        'ar',
        '--max-new-tokens',
        '2',
        '--json',
        '--device',
        'webgpu',
      );
      expect(r.status, r.stderr).toBe(0);
      expect((JSON.parse(r.stdout) as { tokens: number[] }).tokens).toHaveLength(2);
      expect(r.stderr).toMatch(/^WebGPU adapter: /m);
    },
    300_000, // a fresh machine compiles every shader (see ort-node-webgpu.test.ts): 93 s alone
  );

  it('chooses the wasm threads on a first run (said on stderr, in the JSON), and remembers them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'spec-decoder-threads-'));
    try {
      const args = ['--prompt', 'It is a truth', '--method', 'ar', '--max-new-tokens', '4', '--json'];
      const first = generateWith({ SPEC_DECODER_CACHE: dir }, ...args);
      expect(first.status).toBe(0);
      expect(first.stderr).toMatch(
        /^wasm threads: [12] wasm threads? \(measured in [\d.]+ s; target T\(1\) \+ T\(4\)( \+ 2 draft calls)?, ms, with 1: /m,
      );
      const runtime = (JSON.parse(first.stdout.trim().split('\n').at(-1) as string) as { runtime: unknown }).runtime;
      expect(runtime).toMatchObject({ device: 'wasm', threadChoice: { how: 'measured' } });
      const again = generateWith({ SPEC_DECODER_CACHE: dir }, ...args);
      expect(again.stderr).not.toMatch(/wasm threads/);
      const second = JSON.parse(again.stdout.trim().split('\n').at(-1) as string) as typeof first & {
        runtime: { threads: number; threadChoice: { how: string } };
      };
      expect(second.runtime.threadChoice.how).toBe('remembered');
      expect(second.runtime.threads).toBe((runtime as { threads: number }).threads);
      // Asked for: no measurement.
      const asked = generateWith({ SPEC_DECODER_CACHE: dir }, ...args, '--threads', '1');
      expect(JSON.parse(asked.stdout.trim().split('\n').at(-1) as string).runtime).toMatchObject({
        threads: 1,
        threadChoice: { how: 'asked' },
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);

  it('bundles transformers.js without the native packages the CLI never uses (sharp, onnxruntime-node)', () => {
    expect(generateHere('--help').status).toBe(0);
    const [bundle] = readdirSync(cache).filter((f) => f.endsWith('.mjs'));
    const text = readFileSync(join(cache, bundle as string), 'utf8');
    // transformers.js is in the bundle (its tokenizer classes), not imported from node_modules.
    const has = (re: RegExp) => re.test(text);
    expect(
      has(/\bPreTrainedTokenizer\s*=\s*class\b|\bclass PreTrainedTokenizer\b/),
      'transformers.js in the bundle',
    ).toBe(true);
    expect(has(/from\s*["']@huggingface\/transformers["']/), 'transformers.js imported').toBe(false);
    // If another transformers.js loads them differently, this fails: the CLI's import would pay 0.15 s again.
    expect(has(/from\s*["']sharp["']|require\w*\(\s*["']sharp["']\s*\)/), 'sharp loaded').toBe(false);
    expect(has(/["']onnxruntime-node["']/), 'onnxruntime-node required').toBe(false);
  });

  it('bundles again when a source file changed', () => {
    const touched = join('src', 'cli.ts');
    expect(generateHere('--help').status).toBe(0);
    const before = readdirSync(cache).filter((f) => f.endsWith('.mjs'));
    const now = new Date();
    utimesSync(touched, now, new Date(now.getTime() + 1000)); // same content, new time: a new bundle
    expect(generateHere('--help').status).toBe(0);
    const after = readdirSync(cache).filter((f) => f.endsWith('.mjs'));
    expect(after).toHaveLength(1);
    expect(after).not.toEqual(before);
  });

  it('bundles again when another run removed its bundle between looking for it and importing it', () => {
    expect(generateHere('--help').status).toBe(0);
    // The race, made certain: the first time the bundle is found, it is removed (as a run of other sources does).
    const hook = join(cache, 'remove-after-look.mjs');
    writeFileSync(
      hook,
      "import fs from 'node:fs'; import { syncBuiltinESMExports } from 'node:module';\n" +
        'const look = fs.existsSync; let removed = false;\n' +
        'fs.existsSync = (p) => { const found = look(p);\n' +
        '  if (found && !removed && /cli-[0-9a-f]+\\.mjs$/.test(String(p))) { removed = true; fs.rmSync(p); }\n' +
        '  return found; };\n' +
        'syncBuiltinESMExports();\n',
    );
    const r = spawnSync(
      process.execPath,
      ['--import', pathToFileURL(hook).href, 'tools/bootstrap.mjs', 'generate', '--prompt', 'It is a truth'].concat([
        '--method',
        'ar',
        '--max-new-tokens',
        '2',
        '--json',
      ]),
      { encoding: 'utf8', env: { ...process.env, SPEC_DECODER_CLI_BUNDLE_DIR: cache } },
    );
    expect(r.status, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { tokens: number[] }).tokens).toHaveLength(2);
  });
});
