/**
 * The arms `auto` can pick from (auto.ts chooses among them each round): which ways of drafting there are with what
 * is loaded (a draft model, layer switches, heads), under which conditions each may run, and the priors that let an
 * arm be judged before its first measured round.
 */
import { costIn, relativeCost } from '../calibrate';
import { hasHiddenStates, isLayerSkipping } from '../lm';
import { type AcceptancePrior, chainRound, type DrafterCalls } from '../priors';
import { isGreedy } from '../sampling';
import { ADAPTIVE_DEFAULTS, AdaptiveChainDrafter } from './adaptive-chain';
import { DraftModelState } from './draft-model';
import type { Drafter, DraftRequest } from './drafter';
import { DYNAMIC_DEFAULTS, DynamicTreeDrafter } from './dynamic-tree';
import { EAGLE_DEFAULTS, Eagle3State, EagleDrafter } from './eagle';
import { LOOKAHEAD_DEFAULTS, LookaheadDrafter, lookaheadWidth } from './lookahead';
import { LOOKUP_DEFAULTS, LookupDrafter } from './lookup';
import { MedusaDrafter } from './medusa';
import { MergedDrafter } from './merged';
import { type CostModel, type DrafterResources, draftWidthNearlyFree, widthNearlyFree } from './method';
import { NoDrafter } from './none';
import { SwiftDrafter } from './swift';

/** A way of drafting auto can pick. */
export interface ArmSpec {
  name: string;
  drafter: Drafter;
  /** Whether the arm may run this round (default: always). */
  when?: (req: DraftRequest) => boolean;
  /**
   * Prompt lookup, which auto also asks every round whether the text is being copied (greedy decoding): a long
   * match that predicts more than the chosen arm brings takes that round (COPY_MARGIN).
   */
  copier?: true;
  /**
   * The copier is asked for copy rounds only, never chosen as an arm of its own: its record would be made of bursts
   * (a text that repeats itself) and rounds without a match that are plain rounds, and would hold it in front of the
   * arms for tens of rounds after each burst.
   */
  copyOnly?: true;
  /** The arm already proposes prompt lookup's matches itself (a merged arm): no copy round is taken over it. */
  copies?: true;
  /**
   * Its round predicted from the measured costs, in auto's unit (seconds under real time, single-token calls on the
   * cost model), so that it need not be tried before its first measured round: plain decoding (null: no prediction).
   */
  prior?: (costs: CostModel, measure: 'model' | 'time') => { tokens: number; cost: number } | null;
  /**
   * The prior is an estimate from text measured elsewhere (a drafter's acceptance prior, priors.ts), not the
   * calculation plain decoding's is: a remembered record resting on few rounds is not settled by it (auto.ts restore).
   */
  estimated?: true;
  /**
   * Where the arm may run (ArmSpec.when), its drafter's auxiliary nodes ride along in the other arms' rounds
   * (Drafter.ride), so that state it builds from the target's outputs is ready when it is chosen. Lookahead's pool
   * grows from its Jacobi window round by round: on the bundled pair its rounds bring 1 token each for the first 20 or
   * so, then 2-4. Run only in its own rounds, lookahead brought 1.0 tokens a round in auto on an H100 (13 rounds over
   * 10 prompts) where it brought 1.88 as a method of its own, and auto stayed on the draft model's tree.
   */
  rides?: true;
  /**
   * Its rounds come in runs: copies of a text that repeats itself (prompt lookup, a tree merged with it, lookahead's
   * pool). Where its latest rounds fall far below its record, the run has ended and they become its record
   * (RUN_ENDED_MARGIN). Other arms' records only fade (DECAY): a draft model's chain through a few hard sentences is
   * not a regime that ended. With the rule on every arm, the chain's record was replaced after 3 rounds of 1 token
   * each, plain decoding took over until its next revisit, and auto spent 254 of 1477 rounds on plain decoding
   * where the adaptive chain alone brought 1.61x (wasm in Node, 36 prompts x 2; auto 1.47x).
   */
  runs?: true;
}

/** Plain decoding's round from the measured costs: one token for one single-token verify call. */
export function plainRound(costs: CostModel, measure: 'model' | 'time'): { tokens: number; cost: number } | null {
  const cost = costIn(costs.curve, relativeCost(costs.curve, 1), measure);
  return cost === null ? null : { tokens: 1, cost };
}

/**
 * Tokens a round of lookahead decoding is taken to bring before it has run: below what it brought on every category
 * of the bench prompts with the bundled pair (1.68-2.0 on an H100, 1.5-1.9 on wasm), so that it is tried only where
 * even that would lead, and its first rounds measure it.
 */
const LOOKAHEAD_PRIOR_TOKENS = 1.5;

/**
 * Lookahead decoding's round predicted from the measured costs: LOOKAHEAD_PRIOR_TOKENS for one call as wide as its
 * widest round. On an H100 (every width costs one call: 24 ms) that is ahead of the draft model's tree (2.8 tokens in
 * 56 ms), so it is tried at once; on SwiftShader (a 27-token call about 1.3 s: 1.2 tok/s predicted, where auto ran
 * at about 2 tok/s) far behind, so it costs a revisit now and then.
 */
export function lookaheadRound(costs: CostModel, measure: 'model' | 'time'): { tokens: number; cost: number } | null {
  const cost = costIn(costs.curve, relativeCost(costs.curve, lookaheadWidth(LOOKAHEAD_DEFAULTS)), measure);
  return cost === null ? null : { tokens: LOOKAHEAD_PRIOR_TOKENS, cost };
}

/**
 * An arm's prior from its drafter's shipped acceptance (priors.ts): the chain that pays best on the measured costs.
 * Under greedy decoding only (real time is auto's measure there): the prior is greedy acceptance, and a sampled token
 * matches a guess less often. Without one the arm is tried in its first rounds.
 */
function priorArm(
  prior: AcceptancePrior | undefined,
  calls: (costs: CostModel) => DrafterCalls,
): Pick<ArmSpec, 'prior' | 'estimated'> {
  if (!prior) return {};
  return {
    prior: (costs, measure) => (measure === 'time' ? chainRound(prior, costs.curve, calls(costs), measure) : null),
    estimated: true,
  };
}

/**
 * Prompt lookup asked for copy rounds only (beside a draft model): it matches its longest n-gram alone. It is asked
 * every round, and a shorter match is a guess that never takes a copy round: tracing auto over the bench prompts on
 * wasm in Node (36 prompts), all 33 copy rounds matched 3-grams, agreeing over 3 to 16 tokens. Without a 3-gram match
 * the question now ends in one scan of the text; trying 2- and 1-grams, building their tries and sizing their trees
 * took 0.09 ms of each 6 ms round.
 */
const COPY_LOOKUP = { ...LOOKUP_DEFAULTS, minNgram: LOOKUP_DEFAULTS.maxNgram };

/** The arms auto can use with what is loaded. */
export function autoArms(r: DrafterResources): ArmSpec[] {
  // The arm that drafts least: plain decoding. Prompt lookup's gains come in bursts (the text starts to repeat
  // itself), and auto compares arms on their average over tens of rounds, so with plain decoding as the only floor it
  // met the bursts on whichever arm it had settled on. As the floor itself (a round without a match is a plain round)
  // lookup caught them, but its record was then made of them: after each burst it held the lead through tens of
  // rounds without a match, at plain decoding's speed, while the arms measured behind it waited for revisits
  // (tracing the bench prompts on wasm in Node: 216 rounds of 1.6 tokens and whole prompts at 1 token a round against
  // the merged chain's 2.1). With a draft model, under greedy decoding, it now takes copy rounds only (over plain
  // decoding, the draft model's chain, layer skipping and the heads; the tree arm proposes its matches itself),
  // which count in no record.
  // With a draft model under sampling, where a copied token holds only as often as the target samples it, lookup
  // takes no part. Without a draft model it is an arm of its own beside plain decoding (the two differ only in its
  // matches).
  const arms: ArmSpec[] = r.draft
    ? [
        { name: 'plain', drafter: new NoDrafter(), prior: plainRound },
        {
          name: 'lookup',
          drafter: new LookupDrafter(r.costs, COPY_LOOKUP),
          when: (req) => isGreedy(req.sampling),
          copier: true,
          copyOnly: true,
        },
      ]
    : [
        { name: 'plain', drafter: new NoDrafter(), prior: plainRound },
        { name: 'lookup', drafter: new LookupDrafter(r.costs), copier: true, runs: true },
      ];
  if (r.draft) {
    // Arms on the draft model, one cache between them: its adaptive chain, and its cost-sized tree merged with prompt
    // lookup where width is nearly free (a GPU). Each arm more costs its revisits and the rounds that noise hands it.
    // On a steep curve the chain used to be merged with prompt lookup (the `merged` method) to catch a text that
    // repeats itself; copy rounds catch those matches now, and the merged chain's own work (lookup and merging every
    // round, 0.9 ms at the same width) made it the slower of the two: interleaved on wasm, 36 prompts x 2, three runs
    // each, auto with the merged chain reached 0.93-0.97 of the best fixed method (adaptive 1.24-1.31x over plain
    // decoding, merged 1.22-1.33x; plain decoding 200-530 of its rounds), with the bare chain and copy rounds 0.98-1.00
    // (1.20-1.31x; plain decoding 60-70 rounds, 150-340 copy rounds of 3.4-4 tokens). Under sampling a copied token
    // holds only as often as the target samples it (depth-1 acceptance of lookup 0.13 on the bench prompts at
    // temperature 0.8, 0.69 greedy), so there the chain is the draft model's only arm on a steep curve.
    const draft = new DraftModelState(r.draft);
    // The draft model's arms stand aside once the text no longer leaves room in its context for a drafted token:
    // auto runs to the target's context (the draft model is optional to it), on its other arms from there.
    const draftRoom = r.draft.config.maxPositions;
    const draftFits = (req: DraftRequest) => req.committed.length + 1 < draftRoom;
    // The chain runs on every curve: since it drafts on while more tokens pay (adaptive-chain.ts), on a nearly
    // flat curve it drafts long chains through confident text with width-1 draft calls, where the tree's calls are
    // wider (Chromium's WebGPU on SwiftShader, greedy, 2 prompts: the adaptive chain 2.69x, tau 3.88, against auto
    // without it 2.07x).
    arms.push({
      name: 'chain',
      drafter: new AdaptiveChainDrafter(draft, r.costs),
      when: draftFits,
      ...priorArm(r.priors?.draft, (costs) => ({
        relative: costs.draftRelative,
        maxDepth: ADAPTIVE_DEFAULTS.maxGamma,
      })),
    });
    arms.push({
      name: 'tree',
      copies: true,
      runs: true,
      drafter: new MergedDrafter(
        [
          { label: 'lookup', drafter: new LookupDrafter(r.costs, { ...LOOKUP_DEFAULTS, selfBudget: false }) },
          {
            label: 'draft',
            drafter: new DynamicTreeDrafter(draft, { ...DYNAMIC_DEFAULTS, costAware: true }, r.costs),
          },
        ],
        r.costs,
      ),
      // A tree pays for its width in the draft model's calls too: one call a level, as wide as the level. Where the
      // draft model runs on the CPU beside a GPU target (the default placement when its calls are cheaper there), a
      // wide call costs it 2.2-2.5 single-row calls at 8 rows, and the chain led: on lavapipe the adaptive chain alone
      // made 3.99x where the draft model's tree (`dynamic`) made 3.05x and auto, on its tree arm 45 rounds of 61,
      // 3.42x; on Chromium's SwiftShader the tree arm's rounds brought 4.2 tokens against the chain arm's 6.3; on an
      // H200 the chain alone made 3.6-4.1x and auto, mostly on its tree arm, 3.0-3.2x.
      when: (req) => draftFits(req) && widthNearlyFree(r.costs()) && draftWidthNearlyFree(r.costs()),
    });
  }
  // Lookahead decoding where width is nearly free, under greedy decoding: its Jacobi window rides along in the verify
  // call (about 20 nodes), so it costs no model call of its own. On an H100 it was the best method on the bundled
  // pair (2.04x, 10 prompts), ahead of auto without it (1.76x, on the draft model's tree 216 rounds in 231): there a
  // draft-model call costs 0.6x a target call. Under sampling its n-grams are deterministic proposals, which hold
  // only as often as the target samples them (as prompt lookup's).
  arms.push({
    name: 'lookahead',
    drafter: new LookaheadDrafter(LOOKAHEAD_DEFAULTS),
    prior: lookaheadRound,
    rides: true,
    runs: true,
    when: (req) => isGreedy(req.sampling) && widthNearlyFree(r.costs()),
  });
  if (isLayerSkipping(r.target)) arms.push({ name: 'swift', drafter: new SwiftDrafter(r.target, r.costs, r.store) });
  if (r.heads?.eagle3 && hasHiddenStates(r.target)) {
    const state = new Eagle3State(r.heads.eagle3, r.target.config.vocabSize, r.heads.relativeCost);
    const heads = r.heads;
    arms.push({
      name: 'eagle',
      drafter: new EagleDrafter(state, EAGLE_DEFAULTS, r.costs),
      ...priorArm(r.priors?.heads, () => ({ relative: heads.relativeCost(), maxDepth: EAGLE_DEFAULTS.depth })),
    });
  }
  if (r.heads?.medusa && hasHiddenStates(r.target)) {
    const heads = r.heads;
    const medusa = r.heads.medusa;
    arms.push({
      name: 'medusa',
      drafter: new MedusaDrafter(r.heads.medusa, r.heads.relativeCost, r.costs),
      ...priorArm(r.priors?.heads, () => ({
        relative: heads.relativeCost(),
        perRound: true,
        maxDepth: medusa.count,
      })),
    });
  }
  return arms;
}
