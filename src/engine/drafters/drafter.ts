/**
 * The one interface every drafting method implements (one method per file in this folder, described by a
 * MethodSpec in method.ts and listed in registry.ts).
 *
 * What a drafter may do in one round:
 * - propose a tree under the root (tokens, parents, and per node the distribution its children were drawn from,
 *   or none for deterministic proposals such as n-gram matches);
 * - add auxiliary nodes to the same target call that are not verification candidates (lookahead's Jacobi
 *   branch), with their own positions and attention, and read their logits afterwards;
 * - read what the target computed for its nodes once the round is verified (accept()).
 */
import type { Rng, SamplingParams } from '../sampling';
import type { VerifyResult, VerifyTree } from '../verify';
import type { CostModel } from './method';

export interface DraftRequest {
  /** The committed sequence; its last token is the tree's root (not yet seen by the target). */
  committed: readonly number[];
  /**
   * Most nodes besides the root this round's target call may hold (tree and auxiliary nodes together): the room
   * left in the context of every model involved.
   */
  maxNodes: number;
  /** Deepest tree depth worth drafting (tokens still wanted minus the target's own token). */
  maxDepth: number;
  sampling: SamplingParams;
  rng: Rng;
  /** Tokens that end generation: drafters do not draft past them. */
  eos: ReadonlySet<number>;
  /**
   * Where in `committed` this generation's own tokens begin (the prompt's length): the text the target produced,
   * as against the text it was given. Absent: not known.
   */
  generatedFrom?: number;
  /**
   * The caller leaves out a tree whose best first guess (a child of the root) it values below this. A drafter that
   * can tell cheaply that its best first guess falls short may propose just that guess and skip building the rest.
   */
  minFirstGuess?: number;
}

/**
 * Nodes that ride along in the target call without being verified (e.g. lookahead's Jacobi window). They come
 * after the tree nodes in the call; tree nodes never see them, and their cache slots are dropped with the rest of
 * the round's unaccepted slots.
 */
export interface AuxNodes {
  tokens: number[];
  /** Position id of each auxiliary node. */
  positions: number[];
  /**
   * What each auxiliary node attends to besides the committed prefix and itself: tree nodes (0 = the root) and
   * other auxiliary nodes, by index.
   */
  sees: { tree: number[]; aux: number[] }[];
  /** Auxiliary nodes whose logits the drafter reads back, in this order (TargetOutputs.auxLogits(i)). */
  rows: number[];
}

/** A proposed token tree: node 0 is the root. */
export interface DraftTree extends VerifyTree {
  tokens: number[];
  parents: number[];
  /** draftProbs[i]: the (processed) distribution i's sampled children were drawn from; null when none were. */
  draftProbs: (Float32Array | null)[];
  /**
   * deterministic[i]: node i was proposed without a distribution (an n-gram match, a pool entry). Children of a
   * node whose draftProbs entry is null are deterministic too.
   */
  deterministic?: boolean[];
  /**
   * values[i]: the drafter's estimate of the probability that the target accepts the whole path to node i (1 for
   * the root). Merged drafting and hardware-aware budgets rank nodes by it.
   */
  values?: number[];
  /** Which drafter proposed each node (merged drafting); the round event carries it to the tree view. */
  sources?: string[];
  aux?: AuxNodes;
  /**
   * Set on a source's own tree when it is handed back after a round verified it inside a larger one (merged): the
   * width of that target call. A drafter that measures its rounds' costs per width reads it (absent: its own tree
   * and auxiliary nodes were the call).
   */
  callWidth?: number;
}

/** What the target computed in the round's call, for the drafter to read after verification. */
export interface TargetOutputs {
  /** The target's logits at tree node i ([vocab]; what verification used). */
  logits(node: number): Float32Array;
  /** The target's logits at auxiliary row i (AuxNodes.rows[i]). */
  auxLogits(i: number): Float32Array;
  /**
   * The target's argmax at tree node i, and at auxiliary row i: whatever came back (a greedy round's token ids alone,
   * each row's top k, or the logits), so a drafter that needs no more (lookahead's Jacobi update) reads no logits.
   */
  argmax?(node: number): number;
  auxArgmax?(i: number): number;
  /** The target's hidden state at tree node i (a target built with hidden states, for draft heads). */
  hidden?(node: number): Float32Array;
}

/** A drafter's own account of the round it just proposed (shown in the round event and the element). */
export interface DrafterNote {
  /** One short line, e.g. "lookup: 3-gram match, 2 branches". */
  text: string;
  /** Named figures for the stats view (numbers, or short strings). */
  fields?: Record<string, number | string>;
}

export interface Drafter {
  readonly name: string;
  /** Draft forward calls so far (model calls the drafter made itself; zero for model-free drafters). */
  readonly calls: number;
  /** The drafter reads the target's logits rows after verification (so greedy rounds cannot fetch token ids only). */
  readonly readsTargetLogits?: boolean;
  /**
   * The drafter reads the target's hidden states (draft heads): the round loop asks the target for the prompt's
   * states at prefill (prefilled()) and for every tree node's state at verification (TargetOutputs.hidden).
   */
  readonly readsTargetHidden?: boolean;
  propose(request: DraftRequest): Promise<DraftTree>;
  /**
   * Called after verification, so the drafter can keep the accepted part of its cache and adapt. `outputs` are
   * the target's logits for the tree's nodes and the auxiliary rows asked for.
   */
  accept(tree: DraftTree, result: VerifyResult, outputs: TargetOutputs): void;
  /**
   * Called instead of accept() after a round another drafter proposed (auto's other arms), so a drafter that follows
   * the target's state (draft heads reading its hidden states) stays in step. `tree` is that other drafter's tree.
   */
  observe?(tree: DraftTree, result: VerifyResult, outputs: TargetOutputs): void;
  /**
   * Auxiliary nodes of this drafter's to ride along in another drafter's round (auto, where width is nearly free),
   * within `room` nodes (null: none this round); observe() then reads their outputs. Lookahead's window: its n-gram
   * pool grows in every round, not only in the rounds it drafts.
   */
  ride?(req: DraftRequest, room: number): AuxNodes | null;
  /**
   * A new prompt: forget the text's state. With `keepLearned` (the new generation is greedy, so its text cannot depend
   * on it) what the drafter measured about its own guesses (acceptance per bucket, chain length, back-off) carries
   * over from the generations before; without it (sampling: a seed then reproduces its text) that is forgotten too.
   */
  reset(keepLearned?: boolean): void;
  /** What reset(true) keeps, as plain data, so that it can be remembered between sessions (undefined: nothing). */
  learned?(): unknown;
  /** Start from a remembered learned(); what does not fit (another version, another shape) is ignored. */
  relearn?(state: unknown): void;
  /** What the drafter did this round, if it has something to say. */
  note?(): DrafterNote | null;
  /**
   * Draft heads read the target's hidden states of the prompt: after the prefill (prompt minus its last token),
   * hidden(j) is the state at prompt position j, j < prompt.length - 1 (none for a one-token prompt). Called after
   * reset() for drafters that read the target's hidden states.
   */
  prefilled?(prompt: readonly number[], hidden: (row: number) => Float32Array): void;
  /**
   * The cost of the last proposal's own model calls, in single-token target calls on the measured curves (none
   * given: the drafter makes no model calls). Deterministic given the costs, so choices made from it reproduce.
   */
  draftCost?(costs: CostModel): number;
  /**
   * Milliseconds the last proposal spent catching up on text committed while the drafter did not run: a new
   * prompt's prefill, or the rounds another of auto's arms drafted. A cost of switching to the drafter, not of its
   * rounds: auto leaves it out of the arm's measured time (none given: the drafter never falls behind).
   */
  catchUpMs?(): number;
  /**
   * What this drafter's own rounds would have brought over the text its last proposal caught up on (text another of
   * auto's arms drafted), replayed from the catch-up (greedy decoding only), leaving out the positions `skip` names
   * (positions in the committed text); null when it has no such estimate. Auto adds it to the arm's record, so an arm
   * is judged on the same text as the arm that ran, not only on its revisits. A round not yet decided when the text
   * ran out may be credited with what was known of it then (`credits`); the replay that decides it counts it in full
   * and names the earlier credit (`retract`).
   */
  counterfactual?(skip?: (position: number) => boolean): Counterfactual | null;
  /**
   * Catch up on the text committed while it did not draft, without drafting (greedy decoding only; nothing when it
   * is not behind): auto refreshes an arm it has set aside, so that its replay (counterfactual) stays current.
   */
  refresh?(request: DraftRequest): Promise<void>;
  /**
   * The generation ended (at its end, on an error or a cancel): write down what should outlive it. Awaited before
   * the generation returns, so a CLI process that exits right after keeps it.
   */
  finish?(): Promise<void>;
}

/** Rounds a drafter replayed over text others drafted, the tokens they would have brought and their time. */
export interface Counterfactual {
  rounds: number;
  tokens: number;
  ms: number;
  /**
   * A round an earlier replay credited before it was decided (its text ran out), now replayed again in full and
   * counted in the figures above: what that credit was, to take out of the record (scaled by what the record has
   * faded since it went in).
   */
  retract?: { rounds: number; tokens: number; ms: number };
  /** These figures end with such a credit of a round not yet decided (its retraction comes with a later replay). */
  credits?: boolean;
}

export const rootOnly = (committed: readonly number[]): DraftTree => ({
  tokens: [committed[committed.length - 1] as number],
  parents: [-1],
  draftProbs: [null],
});
