/**
 * In-process A/B of drafting methods on one engine: every bench prompt, every method in a balanced order per prompt
 * and repeat (bench/harness.ts methodOrder), greedy, one process. The bench runs each method in its own cell and a
 * 5% effect drowns in the 2-core machine's drift; here every method meets the same drift, and the figure compared is
 * decoding milliseconds per generated token summed over a category (prefill excluded), against plain decoding (ar)
 * in the same process. Merged rounds are also split by which source proposed each node: how many nodes each source
 * put in the verified tree and how many of those the target accepted.
 *
 *   node --import tsx tools/method-ab.ts [--methods ar,adaptive,merged] [--repeats 2] [--tokens 64] [--threads 2]
 */
import { parseArgs } from 'node:util';
import { methodOrder } from '../bench/harness';
import prompts from '../bench/prompts.json' with { type: 'json' };
import { isMethod, type Method } from '../src/engine/drafters';
import { SpecEngine } from '../src/engine/engine';
import type { GenerationResult, RoundEvent } from '../src/engine/events';
import { GREEDY } from '../src/engine/sampling';
import { ortForNode } from '../src/runtime/ort-node';

const { values } = parseArgs({
  options: {
    target: { type: 'string', default: 'public/models/austen-target' },
    draft: { type: 'string', default: 'public/models/austen-draft' },
    methods: { type: 'string', default: 'ar,adaptive,merged' },
    repeats: { type: 'string', default: '2' },
    tokens: { type: 'string', default: '64' },
    threads: { type: 'string', default: '2' },
  },
});
const methods = (values.methods as string).split(',').map((m) => {
  if (!isMethod(m)) throw new Error(`method-ab: unknown method "${m}"`);
  return m;
});
if (!methods.includes('ar')) methods.unshift('ar');

const engine = await SpecEngine.load(ortForNode(Number(values.threads)), {
  target: values.target as string,
  draft: values.draft as string,
  device: 'wasm',
  precision: 'fp32',
  calibration: 'never',
});
await engine.calibrate();

interface Cell {
  tokens: number;
  ms: number;
  /** Of ms: drafting, verifying (the target call and the verdict), and the rest. */
  draftMs: number;
  verifyMs: number;
  rounds: number;
  width: number;
  /** Per source label: nodes verified and nodes accepted. */
  sources: Map<string, { nodes: number; accepted: number }>;
}
const cells = new Map<string, Cell>();
const cell = (kind: string, method: Method): Cell => {
  const key = `${kind}\t${method}`;
  let c = cells.get(key);
  if (!c) {
    c = { tokens: 0, ms: 0, draftMs: 0, verifyMs: 0, rounds: 0, width: 0, sources: new Map() };
    cells.set(key, c);
  }
  return c;
};

async function run(method: Method, text: string, into: Cell[]): Promise<GenerationResult> {
  const it = engine.generate(text, { method, maxNewTokens: Number(values.tokens), sampling: GREEDY });
  let step = await it.next();
  while (!step.done) {
    countSources(step.value, into);
    step = await it.next();
  }
  const s = step.value.stats;
  for (const c of into) {
    c.tokens += s.tokens;
    c.ms += s.draftMs + s.verifyMs + s.overheadMs;
    c.draftMs += s.draftMs;
    c.verifyMs += s.verifyMs;
    c.rounds += s.rounds;
    c.width += s.meanCallWidth * s.rounds;
  }
  return step.value;
}

function countSources(e: RoundEvent, into: Cell[]): void {
  const { sources, status } = e.tree;
  if (!sources) return;
  for (let i = 1; i < sources.length; i++) {
    const label = sources[i] || '?';
    for (const c of into) {
      const row = c.sources.get(label) ?? { nodes: 0, accepted: 0 };
      row.nodes++;
      if (status[i] === 'accepted') row.accepted++;
      c.sources.set(label, row);
    }
  }
}

const repeats = Number(values.repeats);
const list = prompts.prompts;
for (let r = 0; r < repeats; r++) {
  for (const [p, prompt] of list.entries()) {
    const order = methodOrder(methods, r * list.length + p);
    const line: string[] = [];
    for (const m of order) {
      const result = await run(m, prompt.text, [cell(prompt.kind, m), cell('all', m)]);
      line.push(`${m} ${result.stats.tokensPerSecond.toFixed(0)}`);
    }
    console.error(`repeat ${r + 1}/${repeats} prompt ${p + 1}/${list.length} (${prompt.kind}): ${line.join(', ')}`);
  }
}

const kinds = [...new Set([...list.map((p) => p.kind), 'all'])];
console.log(
  `| category | method | ms/token | over ar | tau | call width | ms a round: draft, verify, other | nodes by source (accepted) |`,
);
console.log(`| --- | --- | --- | --- | --- | --- | --- | --- |`);
for (const kind of kinds) {
  const ar = cell(kind, 'ar');
  const arRate = ar.ms / ar.tokens;
  for (const m of methods) {
    const c = cell(kind, m);
    const rate = c.ms / c.tokens;
    const bySource = [...c.sources]
      .map(([label, s]) => `${label} ${(s.nodes / c.rounds).toFixed(2)} (${(s.accepted / c.rounds).toFixed(2)})`)
      .join(', ');
    console.log(
      `| ${kind} | ${m} | ${rate.toFixed(3)} | ${(arRate / rate).toFixed(3)}x | ${(c.tokens / c.rounds).toFixed(2)} | ${(c.width / c.rounds).toFixed(2)} | ${[c.draftMs, c.verifyMs, c.ms - c.draftMs - c.verifyMs].map((x) => (x / c.rounds).toFixed(2)).join(', ')} | ${bySource || '-'} |`,
    );
  }
}
await engine.release();
