/**
 * Measures a drafter's acceptance prior (src/engine/priors.ts) and writes it into its config.json: for the draft model
 * and for draft heads (an EAGLE-3 head, or Medusa heads with --heads), how often the target takes the drafter's top guess at each depth of a chain, under greedy
 * decoding, on held-out text. `auto` starts a first session from it (the arm it predicts best on the measured costs)
 * instead of trying every arm.
 *
 * The text: the held-out Austen prompts of tools/data/heldout_prompts.txt that the bench does not use (28 of 40),
 * so the bench's prompts never shape the priors. Each drafter drafts a fixed chain of --depth tokens every round
 * (no early stop), so depth d is offered whenever the round accepted everything above it. Acceptance under greedy
 * decoding does not depend on the device; it runs on wasm in fp32.
 *
 *   npx tsx tools/acceptance.ts [--target DIR] [--draft DIR] [--heads DIR] [--depth 16] [--tokens 64] [--prompts FILE] [--write]
 *
 * Without --write it prints the priors; with it, it also writes them into the drafters' config.json (a key
 * `acceptance_prior`; the rest of the file is kept).
 */
import { accessSync, constants, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import prompts from '../bench/prompts.json' with { type: 'json' };
import { ChainDrafter } from '../src/engine/drafters/chain';
import type { Drafter } from '../src/engine/drafters/drafter';
import { Eagle3State, EagleDrafter } from '../src/engine/drafters/eagle';
import { MedusaDrafter } from '../src/engine/drafters/medusa';
import type { SpecEngine } from '../src/engine/engine';
import { generateAll } from '../src/engine/generate';
import {
  type AcceptanceFile,
  identityOf,
  MIN_OFFERED,
  PRIOR_KEY,
  type WeightsIdentity,
  weightsOf,
} from '../src/engine/priors';
import { GREEDY } from '../src/engine/sampling';
import { setKey } from './json-key';

const USAGE = `npx tsx tools/acceptance.ts [--target DIR] [--draft DIR] [--heads DIR] [--depth 16] [--tokens 64] [--threads 2] [--prompts FILE] [--write]

Measures how often the target takes a drafter's top guess at each depth of a chain, given it took the ones above
(greedy, wasm, fp32), for the draft model and for the heads (an EAGLE head, or Medusa heads: each head's top guess),
on the held-out prompts the bench does not use, and prints it; --write stores it in each drafter's config.json as
acceptance_prior (the rest of the file kept as it is), which auto predicts its first rounds from.
  --draft '' or --heads ''  leave one out
  --depth N                 the chain's length, 1-32 (default 16)
  --tokens N                new tokens a prompt (default 64)
  --threads N               onnxruntime's wasm threads (default 2)
  --prompts FILE            other text, one prompt a line (for other models: text they were not trained on)`;

/** The held-out prompts the bench does not use. */
export function priorPrompts(): string[] {
  const bench = new Set(prompts.prompts.map((p) => p.text.trim()));
  return readFileSync(join(import.meta.dirname, 'data', 'heldout_prompts.txt'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !bench.has(l));
}

/** Prompts from a file, one a line (blank lines left out); one line error where there are none. */
export function promptsFrom(file: string): string[] {
  const texts = readFileSync(file, 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  if (texts.length === 0) throw new Error(`--prompts ${file} holds no prompt (one a line)`);
  return texts;
}

export interface MeasuredPrior {
  depths: number[];
  offered: number[];
  accepted: number[];
  rounds: number;
  tokens: number;
}

/** Greedy generations with `drafter` over the prompts; acceptance per depth summed over all their rounds. */
export async function measureChain(
  engine: SpecEngine,
  drafter: Drafter,
  texts: readonly string[],
  maxNewTokens: number,
): Promise<MeasuredPrior> {
  const offered: number[] = [];
  const accepted: number[] = [];
  let rounds = 0;
  let tokens = 0;
  for (const text of texts) {
    drafter.reset?.();
    const parts = { target: engine.target, drafter, tokenizer: engine.tokenizer };
    const result = await generateAll(parts, engine.encode(text), { maxNewTokens, sampling: GREEDY, stopAtEos: false });
    const counts = result.stats.acceptanceCounts;
    counts.offered.forEach((o, d) => {
      offered[d] = (offered[d] ?? 0) + o;
      accepted[d] = (accepted[d] ?? 0) + (counts.accepted[d] ?? 0);
    });
    rounds += result.stats.rounds;
    tokens += result.stats.tokens;
  }
  const depths = offered.map((o, d) => (o > 0 ? Math.round(((accepted[d] ?? 0) / o) * 1e4) / 1e4 : 0));
  return { depths, offered, accepted, rounds, tokens };
}

/** The draft model's and the EAGLE head's top-guess chains, as the engine has them loaded, with their weights. */
export function chainDrafters(
  engine: SpecEngine,
  depth: number,
): { role: 'draft' | 'heads'; drafter: Drafter; weights: WeightsIdentity }[] {
  const out: { role: 'draft' | 'heads'; drafter: Drafter; weights: WeightsIdentity }[] = [];
  if (engine.draft)
    out.push({
      role: 'draft',
      drafter: new ChainDrafter(engine.draft, { gamma: depth }),
      weights: weightsOf(engine.draft.model),
    });
  // Medusa's heads as a chain: each head's top guess (one call drafts every depth).
  const medusa = engine.heads?.medusa;
  if (engine.heads && medusa)
    out.push({
      role: 'heads',
      drafter: new MedusaDrafter(
        medusa,
        () => 0,
        () => null,
        { topK: 1, maxNodes: depth },
      ),
      weights: weightsOf(engine.heads.loaded),
    });
  const head = engine.heads?.eagle3;
  if (engine.heads && head) {
    const state = new Eagle3State(head, engine.target.config.vocabSize, () => 0);
    const chain = { depth, expand: 1, branch: 1, budget: depth, name: 'eagle-chain' };
    out.push({
      role: 'heads',
      drafter: new EagleDrafter(state, chain, () => null),
      weights: weightsOf(engine.heads.loaded),
    });
  }
  return out;
}

/** The config.json entry for a measured prior. */
export function priorEntry(
  engine: SpecEngine,
  drafter: WeightsIdentity,
  m: MeasuredPrior,
  how: Record<string, unknown>,
): AcceptanceFile {
  return {
    version: 1,
    about:
      "greedy acceptance of this drafter's top guess at each depth of a chain, given the guesses above it were taken, on held-out text (tools/acceptance.ts); auto predicts its rounds from it before measuring any",
    target: identityOf(engine.target.model),
    drafter,
    depths: m.depths,
    offered: m.offered,
    measured: { ...how, rounds: m.rounds, tokens: m.tokens },
  };
}

/** The config's text with the prior set, every other byte kept (json-key.ts). */
export function withPrior(text: string, entry: AcceptanceFile): string {
  return setKey(text, PRIOR_KEY, entry);
}

/** Write the prior into a local model folder's config.json (whole or not at all: a new file renamed over it). */
export function writePrior(folder: string, entry: AcceptanceFile): void {
  const file = join(folder, 'config.json');
  const text = withPrior(readFileSync(file, 'utf8'), entry);
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, text);
  renameSync(temp, file);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      target: { type: 'string', default: 'public/models/austen-target' },
      draft: { type: 'string', default: 'public/models/austen-draft' },
      heads: { type: 'string', default: 'public/models/austen-eagle3' },
      depth: { type: 'string', default: '16' },
      tokens: { type: 'string', default: '64' },
      threads: { type: 'string', default: '2' },
      write: { type: 'boolean', default: false },
      prompts: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const whole = (flag: string, text: string, max: number) => {
    const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
    if (!(n >= 1 && n <= max)) throw new Error(`${flag} must be a whole number from 1 to ${max}; got "${text}"`);
    return n;
  };
  const depth = whole('--depth', values.depth, 32);
  const tokens = whole('--tokens', values.tokens, 100_000);
  const threads = whole('--threads', values.threads, 64);
  if (!values.draft && !values.heads) throw new Error("nothing to measure: --draft '' and --heads '' leave out both");
  const folders = { draft: values.draft, heads: values.heads };
  // A folder the prior cannot be written into is found before the measuring, not after it.
  if (values.write)
    for (const folder of Object.values(folders))
      if (folder) {
        try {
          accessSync(join(folder, 'config.json'), constants.R_OK | constants.W_OK);
        } catch (e) {
          throw new Error(`--write: ${folder}/config.json cannot be written (${(e as NodeJS.ErrnoException).code})`);
        }
      }
  // Other models, other text: a file of prompts, one a line, held out from what the models were trained on.
  const texts = values.prompts ? promptsFrom(values.prompts) : priorPrompts();
  const { SpecEngine } = await import('../src/engine/engine');
  const { ortForNode } = await import('../src/runtime/ort-node');
  const engine = await SpecEngine.load(ortForNode(threads), {
    target: values.target,
    ...(values.draft ? { draft: values.draft } : {}),
    ...(values.heads ? { heads: values.heads } : {}),
    device: 'wasm',
    precision: 'fp32',
    calibration: 'never',
  });
  const measured: { folder: string; entry: AcceptanceFile }[] = [];
  for (const { role, drafter, weights } of chainDrafters(engine, depth)) {
    const m = await measureChain(engine, drafter, texts, tokens);
    const folder = folders[role] as string;
    console.log(`${role} ${folder}: ${m.rounds} rounds, ${m.tokens} tokens; by depth:`);
    console.log(m.depths.map((a, d) => `${d + 1}:${a.toFixed(2)}(${m.offered[d]})`).join(' '));
    // The engine uses a depth resting on MIN_OFFERED rounds or more: one with none would be written for nothing.
    if ((m.offered[0] ?? 0) < MIN_OFFERED)
      throw new Error(
        `${role} ${folder}: depth 1 rests on ${m.offered[0] ?? 0} rounds, fewer than the ${MIN_OFFERED} a prior needs: give more prompts or --tokens (nothing written)`,
      );
    const entry = priorEntry(engine, weights, m, {
      prompts: values.prompts ? `${texts.length} from ${values.prompts}` : texts.length,
      maxNewTokens: tokens,
      depth: m.offered.length,
      device: 'wasm',
      precision: 'fp32',
    });
    measured.push({ folder, entry });
  }
  if (values.write) for (const { folder, entry } of measured) writePrior(folder, entry);
  await engine.release();
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().then(
    () => process.exit(0),
    (e: unknown) => {
      console.error(`error: ${(e as Error).message}`);
      process.exit(1);
    },
  );
}
