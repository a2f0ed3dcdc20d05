/** The terminal front end: strict flags with one-line errors, colours only on a terminal, nothing lost at limits. */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { TestHub } from '../tests/hub/server';
import { type CliIO, main } from './cli';
import { parseCli, UsageError } from './cli/args';
import { jsonResult, wantColour } from './cli/output';
import type { GenerationResult } from './engine/events';

function capture(colour = false): CliIO & { stdout: () => string; stderr: () => string } {
  let out = '';
  let err = '';
  return {
    out: (t) => {
      out += t;
    },
    err: (t) => {
      err += t;
    },
    colour,
    stdout: () => out,
    stderr: () => err,
  };
}

describe('CLI flags', () => {
  it('bad numbers are one line naming the flag, negative ones included', async () => {
    const cases: [string[], RegExp][] = [
      [['--temperature', '-1'], /^error: --temperature must be >= 0; got -1 \(see --help\)\n$/],
      [['--max-new-tokens', '-5'], /^error: --max-new-tokens must be >= 1; got -5/],
      [['--max-new-tokens', '0x10'], /^error: --max-new-tokens expects a whole number, got "0x10"/],
      [['--max-new-tokens', '1e3'], /^error: --max-new-tokens expects a whole number/],
      [['--seed', '12345678901234567890'], /^error: --seed 12345678901234567890 is too large/],
      [['--top-p', '0.5abc'], /^error: --top-p expects a number, got "0.5abc"/],
      [['--top-p', '1.5'], /^error: --top-p must be in \(0, 1\]; got 1.5/],
      [['--nope'], /^error: Unknown option '--nope'/],
      [['--precision', 'int2'], /^error: --precision must be one of fp32, fp16, int4, int8, auto; got "int2"/],
    ];
    for (const [args, expected] of cases) {
      const io = capture();
      expect(await main(['--prompt', 'x', ...args], io)).toBe(2);
      expect(io.stderr()).toMatch(expected);
      expect(io.stderr().trim().split('\n')).toHaveLength(1);
    }
  });

  it('accepts plain decimal numbers', () => {
    const o = parseCli(['--prompt', 'x', '--temperature', '0.7', '--seed', '-3', '--max-new-tokens', '16']);
    expect(o.sampling).toMatchObject({ temperature: 0.7, seed: -3 });
    expect(o.maxNewTokens).toBe(16);
    expect(o.precision).toBe('auto');
    expect(parseCli(['--prompt', 'x', '--precision', 'int4']).precision).toBe('int4');
    expect(parseCli(['--prompt', 'x', '--precision', 'int8']).precision).toBe('int8');
    expect(o.exact).toBe(false);
    expect(parseCli(['--prompt', 'x', '--exact']).exact).toBe(true);
    expect(() => parseCli([])).toThrow(UsageError);
    // Text that starts with a dash (a list item, Austen's '--') is the prompt's, not a flag; a flag after --prompt
    // is a missing prompt.
    expect(parseCli(['--prompt', '- a list item', '--json']).prompt).toBe('- a list item');
    expect(parseCli(['--prompt', '--she said', '--json']).prompt).toBe('--she said');
    expect(parseCli(['--prompt', 'x', '--system', '-terse', '--chat']).system).toBe('-terse');
    expect(() => parseCli(['--prompt', '--json'])).toThrow(UsageError);
    expect(() => parseCli(['--prompt', '--json'])).toThrow(
      '--prompt has no value: --json after it is an option (a value that starts with a dash is written --prompt=--json)',
    );
    expect(parseCli(['--prompt=--json']).prompt).toBe('--json');
  });

  it('colour follows the terminal, NO_COLOR and FORCE_COLOR', () => {
    expect(wantColour({}, true)).toBe(true);
    expect(wantColour({}, false)).toBe(false);
    expect(wantColour({}, undefined)).toBe(false);
    expect(wantColour({ NO_COLOR: '1' }, true)).toBe(false);
    expect(wantColour({ FORCE_COLOR: '1' }, false)).toBe(true);
    expect(wantColour({ FORCE_COLOR: '0' }, true)).toBe(true);
  });

  it('the JSON of a failed run keeps what was generated and names the error', () => {
    const partial = {
      tokens: [5, 6],
      text: ' a b',
      stopReason: 'error',
      stats: {
        targetCalls: 3,
        draftCalls: 0,
        tau: 1,
        wallMs: 1,
        tokensPerSecond: 1,
        acceptanceByDepth: [],
        overheadShare: 0,
      },
    } as unknown as GenerationResult;
    const json = JSON.parse(jsonResult(partial, [], new Error('boom')));
    expect(json).toMatchObject({ tokens: [5, 6], text: ' a b', error: { message: 'boom' } });
    expect(json.stats.stopReason).toBe('error');
    expect(json.stats.arms).toBeUndefined();
    // auto's rounds per drafter, as the text line gives them.
    const arms = [{ name: 'chain', rounds: 3, tokens: 9, ms: 12 }];
    const auto = { ...partial, stats: { ...partial.stats, arms } } as GenerationResult;
    expect(JSON.parse(jsonResult(auto, [])).stats.arms).toEqual(arms);
  });
});

describe('CLI chat flags', () => {
  it('--threads: auto (the default) or a whole number from 1 to 64', () => {
    expect(parseCli(['--prompt', 'x']).threads).toBe('auto');
    expect(parseCli(['--prompt', 'x', '--threads', 'auto']).threads).toBe('auto');
    expect(parseCli(['--prompt', 'x', '--threads', '2']).threads).toBe(2);
    expect(() => parseCli(['--prompt', 'x', '--threads', '0'])).toThrow(
      /--threads must be auto or between 1 and 64; got 0/,
    );
    expect(() => parseCli(['--prompt', 'x', '--threads', '1.5'])).toThrow(/--threads expects a whole number/);
  });

  it('heads: the bundled target gets its own for medusa and eagle; another target must name them', () => {
    expect(parseCli(['--prompt', 'x', '--method', 'eagle']).heads).toBe('public/models/austen-eagle3');
    expect(parseCli(['--prompt', 'x', '--method', 'medusa']).heads).toBe('public/models/austen-medusa');
    expect(parseCli(['--prompt', 'x', '--method', 'chain']).heads).toBeUndefined();
    expect(parseCli(['--prompt', 'x', '--method', 'eagle', '--heads', 'h']).heads).toBe('h');
    expect(() => parseCli(['--prompt', 'x', '--method', 'eagle', '--target', 'elsewhere'])).toThrow(
      /--method eagle needs an EAGLE-3 head and the target's hidden states: pass --heads DIR trained on elsewhere/,
    );
    // auto: the bundled EAGLE head on WebGPU only (its arm pays there), never required.
    expect(parseCli(['--prompt', 'x', '--device', 'webgpu']).heads).toBe('public/models/austen-eagle3');
    expect(parseCli(['--prompt', 'x']).heads).toBeUndefined();
    expect(parseCli(['--prompt', 'x', '--device', 'webgpu', '--target', 'elsewhere']).heads).toBeUndefined();
    expect(parseCli(['--prompt', 'x', '--device', 'webgpu', '--method', 'chain']).heads).toBeUndefined();
    // The bundled target however it is written: ./, a trailing slash, an absolute path, a symlink.
    const link = join(mkdtempSync(join(tmpdir(), 'cli-target-')), 'target');
    symlinkSync(resolve('public/models/austen-target'), link);
    for (const target of [
      './public/models/austen-target',
      'public/models/austen-target/',
      resolve('public/models/austen-target'),
      link,
    ])
      expect(parseCli(['--prompt', 'x', '--method', 'medusa', '--target', target]).heads).toBe(
        'public/models/austen-medusa',
      );
    rmSync(dirname(link), { recursive: true });
  });

  it('--draft-device: where the draft runs, absent unless given, checked', () => {
    expect(parseCli(['--prompt', 'x', '--device', 'webgpu', '--draft-device', 'wasm']).draftDevice).toBe('wasm');
    expect(parseCli(['--prompt', 'x', '--device', 'webgpu']).draftDevice).toBeUndefined();
    expect(() => parseCli(['--prompt', 'x', '--draft-device', 'cpu'])).toThrow(
      /--draft-device must be auto, wasm or webgpu; got "cpu"/,
    );
    expect(parseCli(['--prompt', 'x', '--heads-device', 'wasm']).headsDevice).toBe('wasm');
    expect(() => parseCli(['--prompt', 'x', '--heads-device', 'gpu'])).toThrow(
      /--heads-device must be auto, wasm or webgpu; got "gpu"/,
    );
  });

  it('flags that change nothing for the run are named (notes on stderr), never silently dropped', () => {
    const unused = (...args: string[]) => parseCli(['--prompt', 'x', ...args]).unused;
    expect(unused('--method', 'lookup', '--draft', '/nope')).toEqual([
      '--draft is not used: method lookup runs no draft model',
    ]);
    expect(unused('--method', 'chain', '--heads', 'public/models/austen-medusa')).toEqual([
      '--heads is not used: method chain runs no draft heads',
    ]);
    // ... and not loaded either: a broken heads folder failed a chain run it played no part in.
    expect(parseCli(['--prompt', 'x', '--method', 'chain', '--heads', '/broken']).heads).toBeUndefined();
    expect(parseCli(['--prompt', 'x', '--method', 'auto', '--heads', '/h']).heads).toBe('/h');
    expect(parseCli(['--prompt', 'x', '--method', 'medusa', '--heads', '/h']).heads).toBe('/h');
    expect(unused('--verify', 'typical')).toEqual([
      '--verify typical changes nothing under greedy decoding (it applies with --temperature > 0)',
    ]);
    expect(unused('--verify', 'typical', '--temperature', '0.8')).toEqual([]);
    // Plain decoding verifies no drafts: typical acceptance is not used (the run said it was LOSSY).
    expect(unused('--method', 'ar', '--verify', 'typical', '--temperature', '0.8')).toEqual([
      "--verify typical is not used: method ar verifies no drafts (its output is the target's own)",
    ]);
    expect(parseCli(['--prompt', 'x']).threadsAsked).toBe(false);
    expect(parseCli(['--prompt', 'x', '--threads', '2']).threadsAsked).toBe(true);
    // Sampling settings under greedy decoding, and devices for models the run does not load.
    expect(unused('--top-k', '5')).toEqual([
      '--top-k changes nothing under greedy decoding (it applies with --temperature > 0)',
    ]);
    expect(unused('--seed', '3', '--top-p', '0.5')).toEqual([
      '--top-p, --seed change nothing under greedy decoding (they apply with --temperature > 0)',
    ]);
    expect(unused('--seed', '3', '--top-p', '0.5', '--temperature', '0.7')).toEqual([]);
    expect(unused('--method', 'lookup', '--draft-device', 'wasm')).toEqual([
      '--draft-device is not used: method lookup runs no draft model',
    ]);
    expect(unused('--method', 'lookup', '--heads-device', 'webgpu')).toEqual([
      '--heads-device is not used: method lookup runs no draft heads',
    ]);
    // auto on wasm loads no heads unless given them; with them, or for eagle, the flag applies.
    expect(unused('--heads-device', 'wasm')).toEqual([
      '--heads-device is not used: method auto runs no draft heads here',
    ]);
    expect(unused('--method', 'eagle', '--heads-device', 'wasm')).toEqual([]);
    expect(unused('--draft-device', 'wasm', '--method', 'chain')).toEqual([]);
    // auto runs a draft model and heads when it has them.
    expect(unused('--draft', 'public/models/austen-draft', '--heads', 'public/models/austen-eagle3')).toEqual([]);
    expect(unused()).toEqual([]);
  });

  it('a flag given twice is refused in one line (the last one won without a word)', () => {
    for (const argv of [
      ['--prompt', 'x', '--prompt', 'y'],
      ['--prompt', 'x', '--json', '--json'],
      ['--prompt=x', '--prompt', 'y'],
    ])
      expect(() => parseCli(argv)).toThrow(
        new RegExp(`^--${argv.includes('--json') ? 'json' : 'prompt'} is given more than once$`),
      );
    expect(parseCli(['--prompt', 'x', '--system', 'x', '--chat']).prompt).toBe('x');
  });

  it('parses --chat and --system, and refuses --system alone', () => {
    expect(parseCli(['--prompt', 'Hi', '--chat', '--system', 'Be brief.'])).toMatchObject({
      chat: true,
      system: 'Be brief.',
    });
    expect(parseCli(['--prompt', 'Hi'])).toMatchObject({ chat: false });
    expect(() => parseCli(['--prompt', 'Hi', '--system', 'x'])).toThrow(/--system needs --chat/);
  });

  it('a model without a chat template gives one readable error line and exit code 2', async () => {
    const io = capture();
    const code = await main(
      ['--prompt', 'Hi', '--chat', '--method', 'ar', '--max-new-tokens', '2', '--json', '--threads', '1'],
      io,
    );
    expect(code).toBe(2);
    expect(io.stderr()).toMatch(
      /^error: target model public\/models\/austen-target: this model has no chat template \(tokenizer_config\.json chat_template\)\n$/,
    );
    expect(io.stderr().trim().split('\n')).toHaveLength(1);
  });
});

describe('CLI runs (bundled models)', () => {
  it('prints no escape codes when stdout is not a terminal, and colours when it is', async () => {
    const plain = capture(false);
    expect(await main(['--prompt', 'She was', '--method', 'chain', '--max-new-tokens', '8'], plain)).toBe(0);
    expect(plain.stdout()).not.toContain('\x1b[');
    const coloured = capture(true);
    expect(await main(['--prompt', 'She was', '--method', 'chain', '--max-new-tokens', '8'], coloured)).toBe(0);
    expect(coloured.stdout()).toContain('\x1b[32m');
  });

  it('--exact loads the target for exact decoding and says so in the JSON; without it the target is not', async () => {
    const run = async (extra: string[]) => {
      const io = capture();
      expect(
        await main(['--prompt', 'She was', '--method', 'chain', '--max-new-tokens', '8', '--json', ...extra], io),
      ).toBe(0);
      return JSON.parse(io.stdout()).runtime.target;
    };
    const exact = await run(['--exact']);
    expect(exact.exact).toBe(true);
    expect(['plain', 'hybrid']).toContain(exact.graph);
    expect((await run([])).exact).toBe(false);
  }, 60_000);

  it('--draft-device webgpu beside a target on wasm: the draft runs on wasm, a note on stderr says so (of the models that load), and the JSON does not say "asked"', async () => {
    const io = capture();
    const args = ['--prompt', 'She was', '--method', 'chain', '--max-new-tokens', '4', '--json', '--device', 'wasm'];
    expect(await main([...args, '--draft-device', 'webgpu', '--heads-device', 'webgpu'], io)).toBe(0);
    expect(io.stderr()).toContain(
      'note: the draft model runs on wasm beside a target on wasm (--draft-device webgpu applies beside a WebGPU target)',
    );
    // chain loads no heads: nothing to say about them.
    expect(io.stderr()).not.toContain('the heads run');
    expect(JSON.parse(io.stdout()).runtime.draft).toMatchObject({ device: 'wasm', how: 'target' });
    // The chain's draft model calls: its JavaScript optimised as usual (v8-tiering.ts), and the JSON says so.
    expect(JSON.parse(io.stdout()).runtime.javaScript).toBe('default');
    // eagle loads the bundled target's EAGLE head: the note is about it.
    const heads = capture();
    const eagle = ['--prompt', 'She was', '--method', 'eagle', '--max-new-tokens', '4', '--device', 'wasm'];
    expect(await main([...eagle, '--heads-device', 'webgpu', '--json'], heads)).toBe(0);
    expect(heads.stderr()).toContain(
      'note: the heads run on wasm beside a target on wasm (--heads-device webgpu applies beside a WebGPU target)',
    );
    // The JSON says what the heads computed in, as it does for the target and the draft.
    expect(JSON.parse(heads.stdout()).runtime.heads).toMatchObject({ device: 'wasm', precision: 'fp32' });
    // The heads' calls: a short generation's JavaScript stays on V8's baseline tiers, as plain decoding's does.
    expect(JSON.parse(heads.stdout()).runtime.javaScript).toBe('baseline');
    // Without the flag, no note.
    const quiet = capture();
    expect(await main(args, quiet)).toBe(0);
    expect(quiet.stderr()).not.toContain('note:');
  }, 60_000);

  it('stdout is the text (the stats line goes to stderr), and a run refused before it generates prints only its error', async () => {
    const io = capture();
    expect(
      await main(['--prompt', 'She was', '--method', 'chain', '--max-new-tokens', '8', '--threads', '1'], io),
    ).toBe(0);
    expect(io.stdout()).toMatch(/^She was.+\n$/s);
    expect(io.stdout()).not.toContain('tok/s');
    expect(io.stderr()).toMatch(
      /chain: 8 tokens in .* stop: max-tokens\nloaded in \d+\.\d+ s[^\n]*, warm-up \d+\.\d+ s[^\n]*\n$/,
    );
    // The load's times on their own line after the stats (onnxruntime's start only where it was measured alone).
    const long = capture();
    const words = 'and then '.repeat(1200);
    expect(await main(['--prompt', words, '--method', 'ar', '--max-new-tokens', '4', '--threads', '1'], long)).toBe(2);
    expect(long.stdout()).toBe('');
    expect(long.stderr()).toMatch(/^error: context limit: the prompt has \d+ tokens; the target's context is 1024\n$/);
  }, 60_000);

  it('an interrupt stops the run at the next round and keeps what it made: the text and stats, or the JSON; exit status 130', async () => {
    // A signal that turns aborted on its 8th read: read once as the models load, once before the prompt runs, then
    // once a round (5 rounds).
    const interruptAfter = (reads: number) => {
      let n = 0;
      return {
        get aborted() {
          return ++n > reads;
        },
        reason: 'interrupted',
      } as unknown as AbortSignal;
    };
    const args = ['--prompt', 'She was', '--method', 'chain', '--max-new-tokens', '500', '--threads', '1'];
    const text = { ...capture(), signal: interruptAfter(7) };
    expect(await main(args, text)).toBe(130);
    expect(text.stdout().length).toBeGreaterThan('She was'.length + 5);
    expect(text.stderr()).toMatch(
      / in 5 rounds .*stop: cancelled\nloaded in \d+\.\d+ s[^\n]*, warm-up \d+\.\d+ s[^\n]*\n$/,
    );
    const json = { ...capture(), signal: interruptAfter(7) };
    expect(await main([...args, '--json'], json)).toBe(130);
    const result = JSON.parse(json.stdout());
    expect(result.stats.stopReason).toBe('cancelled');
    expect(result.rounds).toHaveLength(5);
    expect(result.tokens.length).toBeGreaterThanOrEqual(5);
  }, 60_000);

  it('as a process: Ctrl-C keeps the text and exits 130; a closed pipe ends the run quietly', async () => {
    const cli = (extra: string[], onOut: (child: ChildProcess) => void) =>
      new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
        const child = spawn(
          'node_modules/.bin/tsx',
          ['src/cli.ts', '--prompt', 'She was', '--method', 'ar', '--threads', '1', ...extra],
          { env: { ...process.env, SPEC_DECODER_CACHE: mkdtempSync(join(tmpdir(), 'cli-signal-')) } },
        );
        let out = '';
        let err = '';
        let seen = false;
        child.stdout.on('data', (d) => {
          out += d;
          if (!seen) onOut(child);
          seen = true;
        });
        child.stdout.on('error', () => {});
        child.stderr.on('data', (d) => {
          err += d;
        });
        child.on('close', (code) => resolve({ code, out, err }));
      });
    const interrupted = await cli(['--max-new-tokens', '1000'], (child) => child.kill('SIGINT'));
    expect(interrupted.code).toBe(130);
    expect(interrupted.out.startsWith('She was')).toBe(true);
    expect(interrupted.err).toMatch(/stop: cancelled\nloaded in \d+\.\d+ s[^\n]*, warm-up \d+\.\d+ s[^\n]*\n$/);
    // A process of its own starts onnxruntime beside the reading, and says how long that took.
    expect(interrupted.err).toMatch(
      /loaded in \d+\.\d+ s \(onnxruntime's start \d+\.\d+ s of it, beside the reading\)/,
    );
    const terminated = await cli(['--max-new-tokens', '1000'], (child) => child.kill('SIGTERM'));
    expect(terminated.code).toBe(143);
    expect(terminated.err).toMatch(/stop: cancelled\nloaded in \d+\.\d+ s[^\n]*, warm-up \d+\.\d+ s[^\n]*\n$/);
    const piped = await cli(['--max-new-tokens', '1000'], (child) => child.stdout?.destroy());
    expect(piped.err).not.toMatch(/EPIPE|Error/);
    expect(piped.code).toBe(0);
    // stderr into the same closed pipe (`2>&1 | head`) too.
    const both = await cli(['--max-new-tokens', '1000'], (child) => {
      child.stdout?.destroy();
      child.stderr?.destroy();
    });
    expect(both.code).toBe(0);
  }, 60_000);

  it('as a process: stdout that cannot be written (a full disk) is one error line and exit 1, text or JSON', async () => {
    const full = (extra: string[]) =>
      new Promise<{ code: number | null; err: string }>((resolve) => {
        const child = spawn(
          'node_modules/.bin/tsx',
          ['src/cli.ts', '--prompt', 'She was', '--method', 'ar', '--threads', '1', '--max-new-tokens', '5', ...extra],
          {
            env: { ...process.env, SPEC_DECODER_CACHE: mkdtempSync(join(tmpdir(), 'cli-full-')) },
            stdio: ['ignore', openSync('/dev/full', 'w'), 'pipe'],
          },
        );
        let err = '';
        child.stderr?.on('data', (d) => {
          err += d;
        });
        child.on('close', (code) => resolve({ code, err }));
      });
    // Before: the JSON run exited 0 with its object lost and nothing said; the text run crashed with a stack trace.
    for (const run of [await full(['--json']), await full([])]) {
      expect(run.code).toBe(1);
      expect(run.err).toMatch(/^error: cannot write the output \(ENOSPC: no space left on device, write\)$/m);
      expect(run.err).not.toMatch(/\n\s+at /);
    }
  }, 60_000);

  it('a prompt near the context limit with the adaptive tree stops cleanly with everything generated', async () => {
    const words = readFileSync('tools/data/heldout_prompts.txt', 'utf8').replace(/\s+/g, ' ');
    const io = capture();
    const code = await main(
      ['--prompt', words.slice(0, 4120), '--method', 'adaptive-tree', '--max-new-tokens', '100', '--json'],
      io,
    );
    expect(io.stderr()).toBe('');
    expect(code).toBe(0);
    const json = JSON.parse(io.stdout());
    expect(json.stats.stopReason).toBe('context');
    expect(json.tokens.length).toBeGreaterThan(0);
  }, 60_000);
});

describe('CLI: the records file', () => {
  it('says once that a damaged records file could not be read (it is then rewritten)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cli-records-'));
    writeFileSync(join(dir, 'records.json'), '{ "costs": [1, ');
    const saved = process.env.SPEC_DECODER_CACHE;
    process.env.SPEC_DECODER_CACHE = dir;
    try {
      const run = async () => {
        const io = capture();
        // auto saves its arms at the end of every generation (plain decoding may save nothing: what it would, the
        // graph variant and the costs, an earlier test in this process may have decided already).
        const args = ['--prompt', 'She was', '--method', 'auto', '--max-new-tokens', '4', '--threads', '1'];
        expect(await main(args, io)).toBe(0);
        return io.stderr();
      };
      expect(await run()).toContain(
        `note: ${join(dir, 'records.json')} could not be read (not valid JSON): what it remembered is measured again\n`,
      );
      // The run's saves are written in the background: once one lands, the file reads again, and nothing is said.
      await vi.waitFor(() => JSON.parse(readFileSync(join(dir, 'records.json'), 'utf8')), { timeout: 10_000 });
      expect(await run()).not.toContain('could not be read');
    } finally {
      if (saved === undefined) delete process.env.SPEC_DECODER_CACHE;
      else process.env.SPEC_DECODER_CACHE = saved;
    }
  }, 60_000);
});

describe('CLI: a records file that cannot be written', () => {
  it('says so once at the end, and the run still succeeds', async () => {
    // The records' folder lies under a file: it cannot be made (ENOTDIR), as with no permission to write there.
    const file = join(mkdtempSync(join(tmpdir(), 'cli-unwritable-')), 'a-file');
    writeFileSync(file, 'x');
    const dir = join(file, 'cache');
    const saved = process.env.SPEC_DECODER_CACHE;
    process.env.SPEC_DECODER_CACHE = dir;
    try {
      const io = capture();
      const args = ['--prompt', 'She was', '--method', 'auto', '--max-new-tokens', '4', '--threads', '1'];
      expect(await main(args, io)).toBe(0);
      const unsaved = `note: ${join(dir, 'records.json')} could not be written (ENOTDIR): what this run measured is measured again next time\n`;
      expect(io.stderr().split(unsaved).length - 1).toBe(1);
      expect(io.stderr().endsWith(unsaved)).toBe(true);
    } finally {
      if (saved === undefined) delete process.env.SPEC_DECODER_CACHE;
      else process.env.SPEC_DECODER_CACHE = saved;
    }
  }, 60_000);
});

describe('CLI: models from a hub', () => {
  /** Runs main() with the hub's environment set for it (HF_ENDPOINT, HF_HOME), restored after. */
  async function withHubEnv<T>(env: Record<string, string>, run: () => Promise<T>): Promise<T> {
    const saved = { ...process.env };
    delete process.env.HF_HUB_CACHE;
    Object.assign(process.env, env);
    try {
      return await run();
    } finally {
      for (const k of Object.keys(env)) delete process.env[k];
      Object.assign(process.env, saved);
    }
  }
  const args = ['--target', 'hf:test/austen-target', '--method', 'ar', '--max-new-tokens', '3', '--threads', '1'];
  const prompt = ['--prompt', 'She was'];

  it('says which files it downloads, and warns when it runs offline on the cached copy', async () => {
    const hub = await TestHub.start();
    hub.addRepo('test/austen-target', 'public/models/austen-target');
    const home = mkdtempSync(join(tmpdir(), 'cli-hub-'));
    try {
      const first = capture();
      expect(await withHubEnv({ HF_ENDPOINT: hub.url, HF_HOME: home }, () => main([...prompt, ...args], first))).toBe(
        0,
      );
      expect(first.stderr()).toMatch(/^downloading hf:test\/austen-target: config\.json$/m);
      const offline = capture();
      // Nothing listens there any more: the cached copy is used, and the CLI says so.
      hub.close();
      expect(await withHubEnv({ HF_ENDPOINT: hub.url, HF_HOME: home }, () => main([...prompt, ...args], offline))).toBe(
        0,
      );
      expect(offline.stderr()).not.toMatch(/^downloading/m);
      expect(offline.stderr()).toMatch(/^warning: hf:test\/austen-target@main: cannot reach .*; using the copy in /m);
      expect(offline.stdout()).toBe(first.stdout());
    } finally {
      hub.close();
    }
  }, 60_000);

  it('Ctrl-C while a hub that never answers holds the load ends the run there (exit 130)', async () => {
    const silent = createServer(() => {}); // accepts, never answers
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    const stop = new AbortController();
    const io = { ...capture(), signal: stop.signal };
    const timer = setTimeout(() => stop.abort('interrupted'), 1500);
    try {
      const home = mkdtempSync(join(tmpdir(), 'cli-hub-'));
      const code = await withHubEnv({ HF_ENDPOINT: `http://127.0.0.1:${port}`, HF_HOME: home }, () =>
        main([...prompt, ...args], io),
      );
      expect(code).toBe(130);
      expect(io.stdout()).toBe('');
      expect(io.stderr()).toMatch(/^stopped while loading the models \(interrupted\)\n$/m);
    } finally {
      clearTimeout(timer);
      silent.closeAllConnections();
      silent.close();
    }
  }, 20_000);
});
