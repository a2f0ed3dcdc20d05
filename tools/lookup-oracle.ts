/**
 * How much prompt lookup could bring at best on a target: for every bench prompt, the target's own greedy text (plain
 * decoding), then an oracle that drafts, each round, exactly the longest run of the coming tokens that follows an
 * earlier occurrence of the text's last n tokens (it knows the future, so it never drafts a token the target rejects
 * and picks the best of all matches), verified on the measured verify-cost curve of this machine with no overhead.
 * Two oracles: lookup's own rule (the longest matching n-gram, n = 3 down to 1, at most 8 tokens) and any n-gram of
 * 1 to 3 with at most 16. Prints tau and the ideal speedup per prompt category (median and mean over its prompts).
 * A real drafter can only do worse: it must guess how far a match goes and which match the text follows.
 *
 *   npx tsx tools/lookup-oracle.ts [--target DIR] [--tokens 64] [--threads 2]
 */
import { parseArgs } from 'node:util';
import prompts from '../bench/prompts.json' with { type: 'json' };
import { relativeCost } from '../src/engine/calibrate';
import { findMatches, LOOKUP_DEFAULTS } from '../src/engine/drafters/lookup';
import { NoDrafter } from '../src/engine/drafters/none';
import { SpecEngine } from '../src/engine/engine';
import { generateAll } from '../src/engine/generate';
import { GREEDY } from '../src/engine/sampling';
import { ortForNode } from '../src/runtime/ort-node';
import { median } from '../src/util/median';

const { values } = parseArgs({
  options: {
    target: { type: 'string', default: 'public/models/austen-target' },
    tokens: { type: 'string', default: '64' },
    threads: { type: 'string', default: '2' },
  },
});

/** The longest run of `future` that follows an earlier occurrence of seq's last n tokens (n from maxN down to 1). */
function oracleRun(seq: readonly number[], future: readonly number[], maxN: number, longestOnly: boolean): number {
  let best = 0;
  for (let n = Math.min(maxN, seq.length - 1); n >= 1; n--) {
    const starts = findMatches(seq, n, Number.POSITIVE_INFINITY);
    for (const start of starts) {
      let k = 0;
      while (k < future.length && start + n + k < seq.length && seq[start + n + k] === future[k]) k++;
      best = Math.max(best, k);
    }
    // Lookup drafts from the longest n-gram that matches at all.
    if (longestOnly && starts.length > 0) break;
  }
  return best;
}

const engine = await SpecEngine.load(ortForNode(Number(values.threads)), {
  target: values.target,
  device: 'wasm',
  precision: 'fp32',
  calibration: 'never',
});
const { curve } = await engine.calibrate();
const oracles = [
  { label: `lookup's rule (longest n-gram, n <= ${LOOKUP_DEFAULTS.maxNgram}, <= 8 tokens)`, longest: true, cap: 8 },
  { label: 'any n-gram (n <= 3, <= 16 tokens)', longest: false, cap: 16 },
];
const rows = new Map<string, { tau: number[]; speedup: number[] }>();
for (const p of prompts.prompts) {
  const ids = engine.encode(p.text);
  const parts = { target: engine.target, drafter: new NoDrafter(), tokenizer: engine.tokenizer };
  const result = await generateAll(parts, ids, { maxNewTokens: Number(values.tokens), sampling: GREEDY });
  const out = result.tokens;
  for (const o of oracles) {
    let at = 0;
    let rounds = 0;
    let cost = 0;
    while (at < out.length) {
      const k = Math.min(
        o.cap,
        oracleRun([...ids, ...out.slice(0, at)], out.slice(at), 3, o.longest),
        out.length - at - 1,
      );
      at += k + 1;
      rounds++;
      cost += relativeCost(curve, k + 1);
    }
    const key = `${p.kind}\t${o.label}`;
    const row = rows.get(key) ?? { tau: [], speedup: [] };
    row.tau.push(out.length / rounds);
    row.speedup.push(out.length / cost);
    rows.set(key, row);
  }
}
const mean = (v: number[]) => v.reduce((a, b) => a + b, 0) / v.length;
console.log(`Verify-cost curve: ${curve.points.map((pt) => `T(${pt.q})/T(1) ${pt.relative.toFixed(2)}`).join(', ')}\n`);
console.log('| category | oracle | prompts | tau median (mean) | ideal speedup median (mean) |');
console.log('| --- | --- | --- | --- | --- |');
for (const [key, r] of rows) {
  const [kind, label] = key.split('\t');
  console.log(
    `| ${kind} | ${label} | ${r.tau.length} | ${median(r.tau).toFixed(2)} (${mean(r.tau).toFixed(2)}) | ${median(r.speedup).toFixed(2)}x (${mean(r.speedup).toFixed(2)}x) |`,
  );
}
await engine.release();
process.exit(0);
