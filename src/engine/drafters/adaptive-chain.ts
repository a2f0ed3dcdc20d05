/**
 * Adaptive draft length. Without a cost model it follows Hugging Face's assisted generation: +2 after a fully
 * accepted draft, -1 otherwise (between 1 and maxGamma), and the draft stops early when its confidence in its own
 * token drops below a threshold (0.4, transformers' assistant_confidence_threshold).
 *
 * With a cost model it is hardware-aware: token by token it drafts on while more tokens raise the round's expected
 * tokens per unit time (calibrate.ts paysToExtend, EAGLE-2's expected-gain rule on Sequoia's measured costs). Under
 * greedy decoding the costs are the rounds' own, measured (round-costs.ts: the verify call per width, a draft call,
 * the time between rounds, starting from the calibration), and each token's acceptance is measured per bucket of the
 * draft's confidence in it. Under sampling (a seed must give the same text again) the calibrated costs decide, and
 * each token counts at the measured acceptance. The rule replaces the 0.4 confidence threshold and the +2/-1 length,
 * which cut chains the hardware would pay for.
 */
import { countLike } from '../budget';
import { paysToExtend, worthExtending } from '../calibrate';
import { RoundCosts } from '../round-costs';
import { isGreedy } from '../sampling';
import type { VerifyResult } from '../verify';
import { ChainDrafter } from './chain';
import {
  CONFIDENCE_BUCKETS,
  confidenceBucket,
  type DraftModelState,
  type FirstChoiceCounts,
  type JudgedRow,
  judgeFrom,
} from './draft-model';
import type { Counterfactual, DraftRequest, DraftTree } from './drafter';
import { type CostModel, draftOf, type MethodSpec } from './method';

/** Chain lengths beyond the current one the stopping rule looks at (calibrate.ts paysToExtend). */
const LOOKAHEAD = 3;

export interface AdaptiveChainOptions {
  initialGamma: number;
  maxGamma: number;
  confidence: number;
}

/** What a replayed round not yet decided is credited with so far (AdaptiveChainDrafter.counterfactual). */
interface Credit {
  tokens: number;
  ms: number;
}

export const ADAPTIVE_DEFAULTS: AdaptiveChainOptions = { initialGamma: 5, maxGamma: 16, confidence: 0.4 };

export class AdaptiveChainDrafter extends ChainDrafter {
  override readonly name = 'adaptive';
  private current: number;
  /** Discounted counts of accepted draft tokens and of draft tokens tried. */
  private accepted = 0;
  private tried = 0;
  /** Discounted sum of the draft's probabilities of the tokens counted in `tried`. */
  private confidence = 0;
  /** Greedy rounds' costs as measured in the rounds (round-costs.ts), and this round's times. */
  private readonly measured: RoundCosts;
  private drafting: { started: number; ended: number; ms: number } | null = null;
  /** When the previous round of this text ended (its accept()); null at a new text. */
  private lastEnded: number | null = null;
  /**
   * The replay's unspent end (counterfactual()): the judged rows after its last decided round, over the catch-up
   * `judged` (DraftModelState.judged of that sync), and what the replay of the current catch-up starts with (the
   * previous catch-up's unspent end, where the text follows on).
   */
  private replayTail: { judged: readonly JudgedRow[]; rows: JudgedRow[]; credit: Credit | null } | null = null;
  private carried: JudgedRow[] = [];
  /** What the carried round was credited with (counterfactual(): a round not yet decided, as far as its text went). */
  private carriedCredit: Credit | null = null;
  /**
   * Greedy acceptance by the draft's confidence in the token (buckets of 0.1): tokens offered and accepted, the
   * calibrated confidence counting as two more (acceptanceOf). The relation is far from linear: over the bench
   * prompts on wasm the bundled draft's tokens at confidence 0.0-0.1 were accepted 42% of the time, 0.1-0.2 58%,
   * 0.2-0.3 75%, 0.3-0.4 92%, above 0.4 96-100%, where confidence x calibration (2.2) said 11%, 33%, 55%, 77%: its
   * chains stopped at 2.1 tokens a round where the fixed chain of 4 ran faster. Kept with the draft model's state
   * (DraftModelState.firstChoice), so a tree drafting with the same state (auto's tree arm) adds to it.
   */
  private get table(): FirstChoiceCounts {
    return this.state.firstChoice;
  }

  constructor(
    draft: DraftModelState['lm'] | DraftModelState,
    /** This hardware's measured costs, once known (null: the +2/-1 heuristic). */
    private readonly costs: () => CostModel | null = () => null,
    private readonly adaptive: AdaptiveChainOptions = ADAPTIVE_DEFAULTS,
    /** Milliseconds (tests pass a virtual clock). */
    private readonly clock: () => number = () => performance.now(),
  ) {
    super(draft, { gamma: adaptive.initialGamma, confidence: adaptive.confidence });
    this.current = adaptive.initialGamma;
    this.measured = new RoundCosts(costs);
  }

  /** Per-token acceptance measured so far (a prior of 0.6 before any evidence). */
  get acceptance(): number {
    return (this.accepted + 0.6 * 2) / (this.tried + 2);
  }

  /** What greedy rounds were measured to cost (milliseconds). */
  get roundCosts(): RoundCosts {
    return this.measured;
  }

  override async propose(req: DraftRequest): Promise<DraftTree> {
    const started = this.clock();
    const tree = await super.propose(req);
    const ended = this.clock();
    this.drafting = { started, ended, ms: ended - started - this.state.catchUpMs() };
    return tree;
  }

  /**
   * A greedy token's estimated acceptance from the draft's confidence q in it: the acceptance measured in q's bucket,
   * with q times the calibration counting as two tokens (before any are measured, that alone).
   */
  acceptanceOf(q: number): number {
    const b = confidenceBucket(q);
    const { accepted, offered } = this.table;
    return ((accepted[b] as number) + 2 * Math.min(1, q * this.calibration)) / ((offered[b] as number) + 2);
  }

  /** Acceptance measured over the draft's mean confidence on the same tokens (1 before any evidence). */
  get calibration(): number {
    return this.acceptance / ((this.confidence + 0.6 * 2) / (this.tried + 2));
  }

  protected override gamma(): number {
    // With measured costs the expected-gain rule ends the chain; the cap only bounds a round.
    return this.costs() ? this.adaptive.maxGamma : this.current;
  }

  protected override continueAfter(tree: DraftTree, d: number, p: number): boolean {
    const costs = this.costs();
    if (!costs) return super.continueAfter(tree, d, p);
    if (tree.draftProbs[0]) {
      // Sampling. A sampled token's draft probability says little of its acceptance (min(1, p_target/p_draft)), so
      // each token is estimated by the measured acceptance. On the calibrated costs alone: times measured in the
      // rounds are wall-clock, and a seed must give the same text for the same calibration (the tree shape changes
      // the draws).
      return worthExtending(new Array<number>(d).fill(this.acceptance), costs.curve, costs.draftRelative);
    }
    // Greedy: the text is the same however long the chains, so the rounds' own measured times decide.
    const accept = tokenProbs(tree, d).map((q) => this.acceptanceOf(q));
    return paysToExtend(accept, (k) => this.measured.chainRoundMs(k), LOOKAHEAD);
  }

  override accept(tree: DraftTree, result: VerifyResult): void {
    this.measure(tree);
    super.accept(tree, result);
    const drafted = tree.tokens.length - 1;
    const acceptedNow = result.path.length - 1;
    const triedNow = acceptedNow + (acceptedNow < drafted ? 1 : 0);
    this.accepted = 0.95 * this.accepted + acceptedNow;
    this.tried = 0.95 * this.tried + triedNow;
    const probs = tokenProbs(tree, triedNow);
    this.confidence = 0.95 * this.confidence + probs.reduce((a, b) => a + b, 0);
    if (!tree.draftProbs[0])
      probs.forEach((q, i) => {
        this.table.record(confidenceBucket(q), i < acceptedNow);
      });
    // With measured costs the expected-gain rule sizes each chain; the heuristic's length is for rounds without them.
    if (this.costs()) return;
    const allAccepted = acceptedNow === drafted && drafted >= this.current;
    this.current = allAccepted ? Math.min(this.adaptive.maxGamma, this.current + 2) : Math.max(1, this.current - 1);
  }

  /**
   * The chain's rounds replayed over the text this round's sync caught up on that rounds it did not draft committed
   * (another of auto's arms drafted it; judged by the draft model: its first choice and confidence at each position,
   * DraftModelState.judgedOthers), less the positions `skip` names (auto's copy rounds: prompt lookup's best
   * stretches, counted in no arm's record). Over each stretch of consecutive positions, from its start, it drafts as
   * its rule would (paysToExtend on the acceptance by confidence and the measured round costs), the target keeps the
   * leading first choices it agrees with and adds its own token, and the next round starts after that; a round that
   * would need text past the stretch ends it. Each round costs what a chain of its length was measured to cost, less
   * the time between rounds (auto times an arm's own rounds from its proposal to its verdict). Null under sampling
   * (nothing judged), without measured costs, or before a round of its own has been measured. Confidences past a
   * rejected token are read on the target's text rather than the draft's own, which moves only where the chain
   * would have stopped, not what it brought.
   *
   * Why: auto measured the chain only in the rounds it gave it. Its trial rounds fell on a generation's opening text
   * and each revisit on one or two rounds of whatever text came; on lavapipe with the EAGLE head loaded, auto's chain
   * rounds brought 3.2 tokens over 6 rounds where the chain alone brought 6.5, and the head (4.0 a round) drafted the
   * next 30 rounds.
   *
   * A round its rule had not decided when the text caught up on ended is not lost: it starts the replay of the next
   * catch-up, where that text follows on. Auto refreshes a chain set aside every few rounds, and each catch-up was
   * replayed alone: on SwiftShader, with the chain's acceptance learned high, 12-16 tokens of the EAGLE head's rounds
   * held no whole round of the chain's rule, nothing was replayed, and the head kept 10 rounds of a prompt's opening
   * at 3.5 tokens a round where the chain then brought 7. Meanwhile it is credited with what the text shows of it
   * (replayStretch), and the replay that decides it takes the credit back: the replays of a text caught up on in
   * parts, less what they take back, add up to the replay of it caught up on at once.
   */
  counterfactual(skip: (position: number) => boolean = () => false): Counterfactual | null {
    if (!this.costs() || this.measured.measuredRounds === 0) return null;
    const judged = this.state.judged;
    // A new catch-up: the previous one's unspent end is carried into it (replayed once more for the same catch-up,
    // e.g. with other positions skipped, it starts from the same rows).
    if (this.replayTail && this.replayTail.judged !== judged) {
      this.carried = this.replayTail.rows;
      this.carriedCredit = this.replayTail.credit;
      this.replayTail = null;
    }
    const fresh = this.state.judgedOthers.filter((r) => !skip(r.position));
    const last = this.carried[this.carried.length - 1];
    const follows = last !== undefined && fresh[0]?.position === last.position + 1;
    const rows = follows ? [...this.carried, ...fresh] : fresh;
    const out: Counterfactual = { rounds: 0, tokens: 0, ms: 0 };
    // The carried round was credited with what was known of it then: it is replayed again in full, and that credit
    // is named for the record to take out.
    if (follows && this.carriedCredit) out.retract = { rounds: 1, ...this.carriedCredit };
    let tail: JudgedRow[] = [];
    let credit: Credit | null = null;
    for (let from = 0; from < rows.length; ) {
      let to = from + 1;
      while (to < rows.length && (rows[to] as JudgedRow).position === (rows[to - 1] as JudgedRow).position + 1) to++;
      const stretch = rows.slice(from, to);
      const open = this.replayStretch(stretch, out);
      if (to === rows.length && open) {
        tail = stretch.slice(open.at);
        credit = open.credit;
      }
      from = to;
    }
    this.replayTail = { judged, rows: tail, credit };
    if (credit) out.credits = true;
    return out.rounds > 0 || out.retract ? out : null;
  }

  /**
   * Catch up on the text committed while it did not draft, judging it (greedy decoding, more than an ordinary
   * round's two tokens behind), without drafting: counterfactual() then replays it. Auto's refresh of a chain it has
   * set aside; the catch-up is the one the chain's next round would make, made earlier.
   */
  async refresh(req: DraftRequest): Promise<void> {
    if (!isGreedy(req.sampling) || !this.state.fellBehind(req.committed)) return;
    await this.state.sync(req.committed, judgeFrom(req));
  }

  /**
   * The chain's rounds over one stretch of consecutive judged positions (counterfactual), added to `out`, and the
   * round its rule had not decided by the stretch's end: where it starts, and what it is credited with meanwhile
   * (added to `out` too), what is known of it so far: the leading guesses the text confirms (and the target's
   * correction where one is wrong), at the cost of the chain drafted so far. The replay that decides it counts it in
   * full and takes the credit back (Counterfactual.retract); the acceptance the rule drafts by may have moved in
   * between, so the round then decided can be shorter or longer than the part credited. On
   * SwiftShader, with the chain's acceptance learned high (rounds of 17), a refresh over the EAGLE head's 13 tokens
   * of trial rounds credited nothing, and the head kept four more rounds at half the chain's tokens before the
   * next refresh decided one.
   */
  private replayStretch(rows: readonly JudgedRow[], out: Counterfactual): { at: number; credit: Credit } | null {
    const rule = (k: number) => this.measured.chainRoundMs(k);
    const between = this.measured.betweenMs();
    const max = this.adaptive.maxGamma;
    for (let at = 0; ; ) {
      // Draft from `at`: one token, then on while the rule says more pay.
      const accept: number[] = [];
      let length = 0;
      let decided = false;
      while (at + length < rows.length) {
        accept.push(this.acceptanceOf((rows[at + length] as JudgedRow).confidence));
        length++;
        if (length === max || !paysToExtend(accept, rule, LOOKAHEAD)) {
          decided = true;
          break;
        }
      }
      let kept = 0;
      while (kept < length && rows[at + kept]?.hit) kept++;
      // Undecided: the rule would draft past the stretch, or the target's own token (correction or bonus) lies past it.
      if (!decided || at + kept >= rows.length) {
        if (length === 0) return null;
        const credit = { tokens: kept + (kept < length ? 1 : 0), ms: Math.max(0, rule(length) - between) };
        out.rounds++;
        out.tokens += credit.tokens;
        out.ms += credit.ms;
        return { at, credit };
      }
      out.rounds++;
      out.tokens += kept + 1;
      out.ms += Math.max(0, rule(length) - between);
      at += kept + 1;
    }
  }

  /**
   * Another drafter's round (auto's other arms): the time until this one's next round is not a gap between rounds of
   * its own. Counted as one, it put other arms' rounds in this chain's fixed cost per round and drew its chains long
   * (auto on wasm: 3.4 tokens a round at 2.75 ms a token, the chain alone 3.2 at 2.57).
   */
  observe(): void {
    this.lastEnded = null;
  }

  /** A greedy round's measured times, with costs known (RoundCosts). */
  private measure(tree: DraftTree): void {
    const drafting = this.drafting;
    this.drafting = null;
    const now = this.clock();
    const gapMs = this.lastEnded === null || drafting === null ? null : drafting.started - this.lastEnded;
    this.lastEnded = now;
    if (!this.costs() || drafting === null || tree.draftProbs[0]) return;
    this.measured.record({
      // The call's width: auxiliary nodes riding along (auto's lookahead window) are verified in the same call, and
      // merged verifies the chain inside its merged tree.
      width: tree.callWidth ?? tree.tokens.length + (tree.aux?.tokens.length ?? 0),
      draftCalls: tree.tokens.length - 1,
      draftMs: drafting.ms,
      verifyMs: now - drafting.ended,
      gapMs,
    });
  }

  learned(): unknown {
    return {
      current: this.current,
      accepted: this.accepted,
      tried: this.tried,
      confidence: this.confidence,
      byConfidence: { offered: [...this.table.offered], accepted: [...this.table.accepted] },
    };
  }

  relearn(state: unknown): void {
    const s = state as {
      current?: unknown;
      accepted?: unknown;
      tried?: unknown;
      confidence?: unknown;
      byConfidence?: unknown;
    } | null;
    const { current, accepted, tried, confidence, byConfidence } = s ?? {};
    if (!Number.isInteger(current) || (current as number) < 1 || (current as number) > this.adaptive.maxGamma) return;
    if (!countLike(accepted) || !countLike(tried) || accepted > tried) return;
    this.current = current as number;
    this.accepted = accepted;
    this.tried = tried;
    // Records from before the calibration was kept: the draft's confidence taken as the measured acceptance.
    this.confidence = countLike(confidence) && confidence <= tried ? confidence : accepted;
    // The acceptance by confidence, where it fits (records from before it was kept have none).
    const table = byConfidence as { offered?: unknown; accepted?: unknown } | undefined;
    const fits = (a: unknown): a is number[] =>
      Array.isArray(a) && a.length === CONFIDENCE_BUCKETS && a.every(countLike);
    const offered = table?.offered;
    const acceptedIn = table?.accepted;
    if (fits(offered) && fits(acceptedIn) && acceptedIn.every((a, i) => a <= (offered[i] as number))) {
      this.table.offered = [...offered];
      this.table.accepted = [...acceptedIn];
    }
  }

  override reset(keepLearned = false): void {
    super.reset();
    this.drafting = null;
    this.lastEnded = null;
    this.replayTail = null;
    this.carried = [];
    this.carriedCredit = null;
    if (keepLearned) return;
    this.current = this.adaptive.initialGamma;
    this.accepted = 0;
    this.tried = 0;
    this.confidence = 0;
    this.measured.clear();
    this.table.clear();
  }
}

/** The draft's probability of each of the first n drafted tokens of a chain (from its path values). */
function tokenProbs(tree: DraftTree, n: number): number[] {
  const values = tree.values ?? [];
  const out: number[] = [];
  for (let i = 1; i <= n && i < values.length; i++) {
    const before = values[i - 1] as number;
    out.push(before > 0 ? (values[i] as number) / before : 0);
  }
  return out;
}

export const adaptive = {
  name: 'adaptive',
  description:
    "draft model, chain drafted while more tokens pay on the measured costs (greedy: the rounds' own; before calibration: +2/-1 and a 0.4 confidence stop)",
  needs: ['draft-model'],
  lossless: true,
  usesCostModel: true,
  create: (r) => new AdaptiveChainDrafter(draftOf(r), r.costs),
} as const satisfies MethodSpec<'adaptive'>;
