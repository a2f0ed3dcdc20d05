/**
 * Whole generations A/B against another checkout (a git worktree of an earlier commit): one engine of each in one
 * process and one onnxruntime, the same models, every bench prompt run by both in alternating order, greedy (the
 * tokens must be equal), so both meet the same machine drift. Reports per method decoding ms per token (the rounds'
 * time, prefill excluded, as the bench times them) and wall ms per token (the whole generation as its caller waits
 * for it), before and after, summed over the prompts. For changes worth a few percent, which the bench's
 * run-to-run noise on a 2-core machine (5-10%) hides.
 *
 *   git worktree add /tmp/before <commit>   # its node_modules: a folder of links to this checkout's entries
 *   node --import tsx bench/engine-ab.ts --before /tmp/before [--methods ar,adaptive] [--repeats 2] [--tokens 64]
 *     [--threads 2] [--target DIR] [--draft DIR]
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import prompts from '../bench/prompts.json' with { type: 'json' };
import type { Method } from '../src/engine/drafters';
import { SpecEngine } from '../src/engine/engine';
import { GREEDY } from '../src/engine/sampling';
import { ortForNode } from '../src/runtime/ort-node';

const { values } = parseArgs({
  options: {
    before: { type: 'string' },
    target: { type: 'string', default: 'public/models/austen-target' },
    draft: { type: 'string', default: 'public/models/austen-draft' },
    methods: { type: 'string', default: 'ar,adaptive' },
    repeats: { type: 'string', default: '2' },
    tokens: { type: 'string', default: '64' },
    threads: { type: 'string', default: '2' },
  },
});
if (!values.before) throw new Error('engine-ab: --before DIR (a checkout of the commit to compare with) is required');
const methods = (values.methods as string).split(',') as Method[];
const ort = ortForNode(Number(values.threads));
const options = {
  target: values.target as string,
  draft: values.draft as string,
  device: 'wasm' as const,
  precision: 'fp32' as const,
  calibration: 'never' as const,
};
const earlier = (await import(pathToFileURL(resolve(values.before, 'src/engine/engine.ts')).href)) as {
  SpecEngine: typeof SpecEngine;
};
const engines = {
  before: await earlier.SpecEngine.load(ort, options),
  after: await SpecEngine.load(ort, options),
};
type Kind = keyof typeof engines;
const kinds: Kind[] = ['before', 'after'];
// One measured cost curve for both, so cost-aware methods draft alike (the curve is not what is compared here).
const costs = await engines.after.calibrate();
(engines.before as unknown as { costs: unknown }).costs = costs;

const sums = new Map<string, { tokens: number; rounds: number; roundsMs: number; wallMs: number }>();
const add = (key: string, tokens: number, rounds: number, roundsMs: number, wallMs: number) => {
  const s = sums.get(key) ?? { tokens: 0, rounds: 0, roundsMs: 0, wallMs: 0 };
  s.tokens += tokens;
  s.rounds += rounds;
  s.roundsMs += roundsMs;
  s.wallMs += wallMs;
  sums.set(key, s);
};
for (let r = 0; r < Number(values.repeats); r++) {
  for (const [p, prompt] of prompts.prompts.entries()) {
    for (const method of methods) {
      const tokens: Record<string, number[]> = {};
      for (const kind of (r * prompts.prompts.length + p) % 2 === 0 ? kinds : [...kinds].reverse()) {
        const started = performance.now();
        const it = engines[kind].generate(prompt.text, {
          method,
          maxNewTokens: Number(values.tokens),
          sampling: GREEDY,
        });
        let step = await it.next();
        while (!step.done) step = await it.next();
        const wall = performance.now() - started;
        const s = step.value.stats;
        add(`${method}\t${kind}`, s.tokens, s.rounds, s.draftMs + s.verifyMs + s.overheadMs, wall);
        tokens[kind] = step.value.tokens;
      }
      if (JSON.stringify(tokens.before) !== JSON.stringify(tokens.after))
        throw new Error(`engine-ab: ${method} gave different tokens before and after on prompt ${p + 1}`);
    }
  }
  console.error(`repeat ${r + 1}/${values.repeats} done`);
}
console.log(
  `before = ${values.before}; ${prompts.prompts.length} prompts x ${values.repeats}, ${values.tokens} tokens`,
);
console.log(
  '| method | tau before | after | rounds ms/token before | after | after/before | wall ms/token before | after | after/before |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const method of methods) {
  const b = sums.get(`${method}\tbefore`);
  const a = sums.get(`${method}\tafter`);
  if (!a || !b) continue;
  const rb = b.roundsMs / b.tokens;
  const ra = a.roundsMs / a.tokens;
  const wb = b.wallMs / b.tokens;
  const wa = a.wallMs / a.tokens;
  console.log(
    `| ${method} | ${(b.tokens / b.rounds).toFixed(2)} | ${(a.tokens / a.rounds).toFixed(2)} | ${rb.toFixed(3)} | ${ra.toFixed(3)} | ${(ra / rb).toFixed(3)} | ${wb.toFixed(3)} | ${wa.toFixed(3)} | ${(wa / wb).toFixed(3)} |`,
  );
}
await Promise.all(kinds.map((k) => engines[k].release()));
process.exit(0);
