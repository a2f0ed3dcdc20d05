/**
 * The CLI's JavaScript tiering (javaScriptTieringFor): up to JS_BASELINE_UP_TO tokens for what a method's rounds
 * call no function is optimised after the call; beyond it, for the draft model's methods, or when
 * SPEC_DECODER_JS_TIERUP=1 says so, V8 optimises as usual. Each case runs in a child process: the flag is
 * process-wide and for good.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { JS_BASELINE_UP_TO } from './v8-tiering';

const MODULE = fileURLToPath(new URL('./v8-tiering.ts', import.meta.url));

/** A hot loop's function after the call: whether V8 optimised it (polled over 50 rounds of calls). */
function tierAndOptimised(
  tokens: number,
  env: Record<string, string>,
  rounds = 'one-call',
): { tier: string; optimized: boolean } {
  const script = `
    const { javaScriptTieringFor } = await import(${JSON.stringify(MODULE)});
    const tier = javaScriptTieringFor(${tokens}, ${JSON.stringify(rounds)}, ${JSON.stringify(env)});
    function hot(a) { let s = 0; for (let i = 0; i < a.length; i++) s += a[i] * 2; return s; }
    const arr = new Float64Array(200).fill(1);
    let optimized = false;
    for (let round = 0; round < 50 && !optimized; round++) {
      for (let i = 0; i < 1000; i++) hot(arr);
      await new Promise((r) => setTimeout(r, 1));
      optimized = (%GetOptimizationStatus(hot) & 16) !== 0;
    }
    console.log(JSON.stringify({ tier, optimized }));`;
  const out = execFileSync(
    process.execPath,
    ['--allow-natives-syntax', '--import', 'tsx', '--input-type=module', '-e', script],
    { encoding: 'utf8' },
  );
  return JSON.parse(out.trim().split('\n').pop() as string);
}

describe("a one-shot process's JavaScript", () => {
  it('stays on the baseline tiers for a short generation by what its rounds call, else is optimised as usual', () => {
    const oneCall = JS_BASELINE_UP_TO['one-call'];
    expect(tierAndOptimised(oneCall, {})).toEqual({ tier: 'baseline', optimized: false });
    expect(tierAndOptimised(oneCall + 1, {})).toEqual({ tier: 'default', optimized: true });
    // Target-sized passes by depth: a shorter generation's.
    const several = JS_BASELINE_UP_TO['several-calls'];
    expect(several).toBeLessThan(oneCall);
    expect(tierAndOptimised(several, {}, 'several-calls')).toEqual({ tier: 'baseline', optimized: false });
    expect(tierAndOptimised(several + 1, {}, 'several-calls')).toEqual({ tier: 'default', optimized: true });
    // A draft model's calls besides the target's each round: never.
    expect(tierAndOptimised(1, {}, 'draft-model')).toEqual({ tier: 'default', optimized: true });
  });

  it('follows SPEC_DECODER_JS_TIERUP where it is set', () => {
    expect(tierAndOptimised(64, { SPEC_DECODER_JS_TIERUP: '1' })).toEqual({ tier: 'default', optimized: true });
    expect(tierAndOptimised(4096, { SPEC_DECODER_JS_TIERUP: '0' })).toEqual({ tier: 'baseline', optimized: false });
  });
});
