/**
 * How deep and how large the EAGLE-3 head's dynamic tree should be allowed to grow: tau of the bundled head's tree at
 * several shapes on the held-out prompts, through the engine's own rounds (greedy, wasm in Node; tau does not depend
 * on the backend, only on the trees verified). Two kinds of rows:
 *
 * - `--shapes "depth,budget ..."`: the tree with its shape fixed, values by the head's own scores, no cost cut (what
 *   the shape can reach);
 * - `--curves "slope,head ..."`: the drafter exactly as `--method eagle` builds it (calibrated values learned from
 *   nothing, grown and cut on the cost curve) on a synthetic verify-cost curve T(q)/T(1) = 1 + slope (q - 1) with a
 *   head call costing `head` target calls: what a GPU with that curve would verify. tau per block of 10 prompts.
 *
 *   npx tsx tools/eagle-tree-shapes.ts [--shapes "6,24 8,48 10,64"] [--curves "0.005,0.14 0.025,0.14"] [--prompts 40]
 *
 * `--medusa DIR` runs Medusa heads instead (`--method medusa` as built, on the `--curves` only: its tree has no shape
 * to fix), so two sets of heads can be compared on the same curves, free of a calibration's noise.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { CostCurve } from '../src/engine/calibrate';
import type { Drafter } from '../src/engine/drafters/drafter';
import { EAGLE_DEFAULTS, Eagle3State, EagleDrafter } from '../src/engine/drafters/eagle';
import { MedusaDrafter } from '../src/engine/drafters/medusa';
import type { CostModel } from '../src/engine/drafters/method';
import { SpecEngine } from '../src/engine/engine';
import type { GenerationStats } from '../src/engine/events';
import { generateAll } from '../src/engine/generate';
import { GREEDY } from '../src/engine/sampling';
import { pooledAcceptance } from '../src/engine/stats';
import { ortForNode } from '../src/runtime/ort-node';

const { values } = parseArgs({
  options: {
    target: { type: 'string', default: 'public/models/austen-target' },
    heads: { type: 'string', default: 'public/models/austen-eagle3' },
    medusa: { type: 'string' },
    prompts: { type: 'string', default: '40' },
    file: { type: 'string', default: 'tools/data/heldout_prompts.txt' },
    tokens: { type: 'string', default: '64' },
    shapes: { type: 'string', default: '6,24 8,48 10,64 12,64 12,96' },
    curves: { type: 'string', default: '0.005,0.14 0.025,0.14 0.005,0.3' },
  },
});

const pairs = (text: string) =>
  text
    .split(/\s+/)
    .filter(Boolean)
    .map((p) => p.split(',').map(Number) as [number, number]);

const headsDir = String(values.medusa ?? values.heads);
const engine = await SpecEngine.load(ortForNode(2), { target: String(values.target), heads: headsDir, device: 'wasm' });
const head = engine.heads?.eagle3;
const medusaHeads = engine.heads?.medusa;
if (values.medusa ? !medusaHeads : !head)
  throw new Error(`eagle-tree-shapes: ${headsDir} holds no ${values.medusa ? 'Medusa heads' : 'EAGLE-3 head'}`);
const prompts = readFileSync(String(values.file), 'utf8')
  .split('\n')
  .filter(Boolean)
  .slice(0, Number(values.prompts))
  .map((p) => engine.encode(p));
const vocab = engine.target.config.vocabSize;

function syntheticCosts(slope: number, headRelative: number): CostModel {
  const curve: CostCurve = {
    context: 64,
    points: [1, 2, 4, 8, 16, 32, 64].map((q) => ({ q, ms: 1 + slope * (q - 1), relative: 1 + slope * (q - 1) })),
  };
  return { curve, draftRelative: 0, draftCurve: { context: 0, points: [] }, headsRelative: headRelative };
}

/** tau per block of 10 prompts, the mean tree size, acceptance by depth over all. */
async function run(drafter: Drafter): Promise<string> {
  const blocks: string[] = [];
  let tokens = 0;
  let rounds = 0;
  let nodes = 0;
  const all: GenerationStats[] = [];
  for (const [i, prompt] of prompts.entries()) {
    const r = await generateAll({ target: engine.target, drafter, tokenizer: engine.tokenizer }, prompt, {
      maxNewTokens: Number(values.tokens),
      sampling: GREEDY,
    });
    tokens += r.stats.tokens;
    rounds += r.stats.rounds;
    nodes += r.stats.meanTreeSize * r.stats.rounds;
    all.push(r.stats);
    if ((i + 1) % 10 === 0 || i === prompts.length - 1) {
      blocks.push(`${(tokens / rounds).toFixed(2)} (${(nodes / rounds).toFixed(0)} nodes)`);
      tokens = rounds = nodes = 0;
    }
  }
  const byDepth = pooledAcceptance(all)
    .map((a) => a.toFixed(2))
    .join(' ');
  return `tau per 10 prompts ${blocks.join(', ')}; acceptance by depth ${byDepth}`;
}

/** `make`'s drafter on each of --curves, labelled as `--method <method>` with a `call` costing headRelative. */
async function onCurves(method: string, call: string, make: (costs: CostModel, headRelative: number) => Drafter) {
  for (const [slope, headRelative] of pairs(String(values.curves))) {
    const drafter = make(syntheticCosts(slope, headRelative), headRelative);
    console.log(
      `as --method ${method}, T(q)/T(1) = 1 + ${slope} (q - 1), ${call} ${headRelative}: ${await run(drafter)}`,
    );
  }
}

console.log(`${prompts.length} prompts of ${values.file}, ${values.tokens} greedy tokens each`);
if (medusaHeads) {
  await onCurves(
    'medusa',
    'heads call',
    (costs, headRelative) =>
      new MedusaDrafter(
        medusaHeads,
        () => headRelative,
        () => costs,
      ),
  );
}
if (head) {
  for (const [depth, budget] of pairs(String(values.shapes))) {
    const options = { ...EAGLE_DEFAULTS, depth, budget, costAware: false, calibrated: false };
    const drafter = new EagleDrafter(new Eagle3State(head, vocab, () => 0), options, () => null);
    console.log(`depth ${depth}, ${budget} nodes, no cost cut: ${await run(drafter)}`);
  }
  await onCurves(
    'eagle',
    'head call',
    (costs, headRelative) =>
      new EagleDrafter(new Eagle3State(head, vocab, () => headRelative), EAGLE_DEFAULTS, () => costs),
  );
}
await engine.release();
