import { describe, expect, it } from 'vitest';
import { BenchUsageError, parseBenchArgs, partialRun, plannedMethods, rememberedPaths, selectPrompts } from './options';

const kinds = ['austen-heldout', 'list'];
const parse = (args: string[], env: Record<string, string> = {}) => parseBenchArgs(args, env, kinds);

describe('npm run bench flags', () => {
  it('refuse unknown backends, methods, categories and malformed numbers with one line', () => {
    expect(() => parse(['--backends', 'foo'])).toThrow(BenchUsageError);
    expect(() => parse(['--backends', 'foo'])).toThrow(/unknown backend "foo"/);
    expect(() => parse(['--methods', 'chain,nope'])).toThrow(/unknown method "nope"/);
    expect(() => parse(['--categories', 'poetry'])).toThrow(/unknown category "poetry"/);
    for (const bad of ['abc', '0', '-3', '0x10', '1.5', '99999999999999999999'])
      expect(() => parse(['--prompts', bad])).toThrow(/positive integer/);
    expect(() => parse(['--frobnicate'])).toThrow(BenchUsageError);
    // An empty list read as "every one": the whole default bench.
    for (const flag of ['--backends', '--methods', '--categories'])
      for (const empty of ['', ',', ' , '])
        expect(() => parse([flag, empty])).toThrow(`${flag} needs at least one name; got "${empty}"`);
    // A flag none of the backends asked for applies: the results file was named after it, the run did without it.
    expect(() => parse(['--backends', 'chromium-wasm', '--precision', 'int8'])).toThrow(
      '--precision applies to node-wasm only; --backends has chromium-wasm',
    );
    expect(() => parse(['--backends', 'node-wasm', '--draft-device', 'wasm'])).toThrow(
      '--draft-device applies to node-webgpu and chromium-webgpu only; --backends has node-wasm',
    );
    // --trace applies everywhere: Chromium's rounds come back from the bench worker.
    expect(parse(['--backends', 'chromium-wasm,chromium-webgpu', '--trace', '/tmp/rounds.jsonl']).trace).toBe(
      '/tmp/rounds.jsonl',
    );
    expect(() => parse(['--backends', 'chromium-wasm', '--temperature', '0.8'])).toThrow(/^--temperature applies/);
    expect(parse(['--precision', 'int8', '--exact']).precision).toBe('int8'); // all backends: node-wasm among them
    // ortForNode takes 1 to 64 threads (65 was a RangeError with a stack trace once the run began).
    expect(() => parse(['--threads', '65'])).toThrow('--threads must be auto or 1 to 64; got 65');
  });

  it('named methods run on every backend; unnamed, a backend with a plan runs its own list', () => {
    const plan = ['ar', 'chain', 'dynamic'] as const;
    expect(plannedMethods(plan, parse([]))).toEqual(['ar', 'chain', 'dynamic']);
    // auto and merged are not in the plan: before, they were dropped without a word.
    expect(plannedMethods(plan, parse(['--methods', 'ar,auto,chain,merged']))).toEqual([
      'ar',
      'auto',
      'chain',
      'merged',
    ]);
  });

  it('quick mode is node-wasm, one prompt per category, short generations, no peer', () => {
    for (const cli of [parse(['--quick']), parse([], { BENCH_QUICK: '1' })]) {
      expect(cli.backends).toEqual(['node-wasm']);
      expect(cli.promptsPerCategory).toBe(1);
      expect(cli.maxNewTokens).toBe(16);
      expect(cli.peer).toBe(false);
    }
    expect(parse(['--quick', '--backends', 'chromium-wasm']).backends).toEqual(['chromium-wasm']);
  });

  it("name a partial run, so that it never replaces the full run's results", () => {
    expect(partialRun(parse([]))).toBeNull();
    expect(partialRun(parse(['--threads', '2']))).toBeNull();
    expect(parse([]).threads).toBe('auto');
    expect(parse(['--threads', '2']).threads).toBe(2);
    expect(partialRun(parse(['--backends', 'node-wasm', '--methods', 'swift']))).toBe('node-wasm-swift');
    expect(partialRun(parse(['--categories', 'list']))).toBe('list');
    expect(partialRun(parse(['--repeats', '1']))).toBe('sized');
    expect(partialRun(parse(['--no-peer']))).toBe('sized');
    // Names given twice count once: seven node-wasm and thirteen ar made the full run's list length.
    const repeated = (name: string, n: number) => Array.from({ length: n }, () => name).join(',');
    const twice = parse(['--backends', repeated('node-wasm', 7), '--methods', repeated('ar', 13)]);
    expect(twice.backends).toEqual(['node-wasm']);
    expect(twice.methods).toEqual(['ar']);
    expect(partialRun(twice)).toBe('node-wasm-ar');
  });

  it('--no-draft: no draft model, named in the results file', () => {
    expect(parse([]).draftModel).toBe(true);
    expect(parse(['--no-draft']).draftModel).toBe(false);
    expect(partialRun(parse(['--methods', 'ar,auto', '--no-draft']))).toBe('ar+auto-no-draft');
  });

  it('--remember: off unless given, named in the results file, refused where no backend keeps a store', () => {
    expect(parse([]).remember).toBe(false);
    expect(parse(['--remember']).remember).toBe(true);
    expect(partialRun(parse(['--methods', 'ar,auto', '--remember']))).toBe('ar+auto-remembered');
    expect(() => parse(['--backends', 'node-cold,node-cli', '--remember'])).toThrow(
      /^--remember applies to node-wasm and node-webgpu and chromium-wasm and chromium-webgpu only/,
    );
    expect(rememberedPaths({ SPEC_DECODER_CACHE: '/c' })).toEqual({
      records: '/c/bench-records.json',
      profile: '/c/bench-chromium-profile',
    });
  });

  it('--draft-device: checked, absent unless given, named in the results file', () => {
    expect(parse([]).draftDevice).toBeUndefined();
    expect(parse(['--draft-device', 'wasm']).draftDevice).toBe('wasm');
    expect(partialRun(parse(['--methods', 'ar,chain', '--draft-device', 'wasm']))).toBe('ar+chain-draft-wasm');
    expect(() => parse(['--draft-device', 'gpu'])).toThrow(/--draft-device must be auto, wasm or webgpu; got "gpu"/);
  });

  it('--trace: a file for the rounds, absent unless given, and a value it needs', () => {
    expect(parse([]).trace).toBeUndefined();
    expect(parse(['--trace', '/tmp/rounds.jsonl']).trace).toBe('/tmp/rounds.jsonl');
    expect(() => parse(['--trace'])).toThrow(/--trace/);
    // Checked before anything runs (a stack trace once the run had begun).
    expect(() => parse(['--trace', '/nonexistent/dir/t.jsonl'])).toThrow(
      '--trace /nonexistent/dir/t.jsonl: cannot write it (ENOENT)',
    );
    expect(() => parse(['--trace', '/tmp'])).toThrow('--trace /tmp: cannot write it (EISDIR)');
    expect(() => parse(['--trace', ''])).toThrow('--trace needs a file name');
  });

  it('--precision: checked, the engine default when absent, and named in the results file', () => {
    expect(parse([]).precision).toBeNull();
    expect(parse(['--precision', 'int8']).precision).toBe('int8');
    expect(partialRun(parse(['--precision', 'int8']))).toBe('int8');
    expect(parse([]).exact).toBe(false);
    expect(partialRun(parse(['--methods', 'ar,chain', '--exact']))).toBe('ar+chain-exact');
    expect(() => parse(['--precision', 'int3'])).toThrow(
      /--precision must be one of fp32, fp16, int4, int8, auto; got "int3"/,
    );
  });

  it('sampling flags: greedy by default, checked, and named in the results file', () => {
    expect(parse([]).sampling).toBeNull();
    const cli = parse(['--temperature', '0.8', '--top-k', '50', '--top-p', '0.9']);
    expect(cli.sampling).toEqual({ temperature: 0.8, topK: 50, topP: 0.9, seed: 1 });
    expect(partialRun(cli)).toBe('sampled');
    expect(() => parse(['--temperature', 'hot'])).toThrow(/--temperature expects a number/);
    expect(() => parse(['--temperature', '1', '--top-k', '0x10'])).toThrow(/--top-k expects a number, got "0x10"/);
    expect(() => parse(['--temperature', '-1'])).toThrow(/--temperature -1 must be >= 0/);
    expect(() => parse(['--temperature', '1', '--top-k', '2.5'])).toThrow(/top-k 2.5 must be a non-negative integer/);
    expect(() => parse(['--temperature', '1', '--top-p', '0'])).toThrow(/top-p 0 must be in/);
    expect(() => parse(['--top-k', '50'])).toThrow(/need --temperature above 0/);
  });

  it('select at most N prompts of each chosen category', () => {
    const all = [
      { kind: 'a', text: '1' },
      { kind: 'b', text: '2' },
      { kind: 'a', text: '3' },
      { kind: 'a', text: '4' },
    ];
    expect(selectPrompts(all, null, 2).map((p) => p.text)).toEqual(['1', '2', '3']);
    expect(selectPrompts(all, ['a'], null).map((p) => p.text)).toEqual(['1', '3', '4']);
  });
});
