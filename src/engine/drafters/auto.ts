/**
 * `auto`: speculation that fits the machine. Each round it picks one way of drafting (an "arm") and the tree for it:
 *
 * - arms: plain decoding (the arm that drafts least) and, with what is loaded: prompt lookup beside it (without a
 *   draft model), the draft model's adaptive chain (on every curve, under greedy decoding and sampling), its
 *   cost-sized tree merged with prompt lookup where width is nearly free for both models (one draft
 *   cache between them; an arm may run only under a condition, ArmSpec.when), lookahead decoding where width is
 *   nearly free under greedy decoding (its window rides along in the verify call while it is in contention),
 *   self-speculation by layer skipping, and draft heads
 *   (EAGLE-3, Medusa; the arms not chosen in a round observe it, so the heads' view of the target's states stays
 *   current). Within an arm the tree is sized on the measured verify-cost curve: candidates carry calibrated
 *   acceptance values and are kept best-first as long as expected tokens per unit of time grow (budget.ts;
 *   per-source acceptance by sibling rank and confidence is kept by the merged drafter). So on a steep curve (wasm) a
 *   tree shrinks to a short chain or to nothing, on a flat one (a GPU) it grows wide and deep; a tree whose predicted
 *   time per token is worse than plain decoding's is never proposed.
 * - between arms: each arm's throughput over its recent rounds decides: tokens produced per unit of cost. Under
 *   greedy decoding the cost is real time (the text does not depend on the arm, and time counts each arm's own
 *   overhead); under sampling it is the cost model: the verification call on the measured verify-cost curve (width
 *   of tree and auxiliary nodes) plus the arm's own model calls on the measured curves (Drafter.draftCost), so the
 *   choice is reproducible for a seed (same text, same costs, same choices). Every arm is tried early, the others
 *   are revisited now and then (the further behind, the rarer) so the estimates follow the text, and the arm in use
 *   is displaced only by one clearly ahead; an arm whose latest rounds fell to less than half its record (a run of
 *   matches that ended) takes the latest rounds as its record, and is revisited soon. This is the expected-gain rule
 *   applied to whole drafters.
 * - copy rounds: under greedy decoding, where the chosen arm does not propose prompt lookup's matches itself (plain
 *   decoding, the draft model's chain, draft heads, layer skipping), lookup is asked first, and a long match predicted
 *   to bring clearly more than the arm takes the round (AutoDrafter.copyRound). With a draft model lookup takes
 *   copy rounds only: it is not an arm of its own.
 *
 * Why not Sequoia's dynamic programme over (depth, rank) acceptance for a fixed tree shape: our candidates come with
 * per-node estimates (draft confidence, n-gram agreement) that a per-position acceptance vector would throw away;
 * the best-first rerank over them is optimal for any node budget when values never grow along a path, and the
 * measured curve then picks the budget.
 */
import { costIn, relativeCost, singleCallMs } from '../calibrate';
import { isGreedy } from '../sampling';
import { type KeyValueStore, safeGet, safeSet } from '../store';
import { depths } from '../tree';
import type { VerifyResult } from '../verify';
import { type ArmSpec, autoArms } from './auto-arms';
import type { Counterfactual, Drafter, DrafterNote, DraftRequest, DraftTree, TargetOutputs } from './drafter';
import type { CostModel, DrafterResources, MethodSpec } from './method';

interface Arm extends ArmSpec {
  /**
   * Discounted sums of tokens produced and of cost (single-token target calls, or seconds) of its rounds; the
   * discount runs with every round of the generation, so the record of an arm left aside fades and its next
   * revisit counts for more.
   */
  tokens: number;
  cost: number;
  /**
   * The same sums over its latest rounds only (discounted by RECENT_DECAY per round of its own, and started afresh
   * after a pause of more than RECENT_GAP rounds), and how many rounds they hold (discounted alike): where an arm in
   * steady use stands now, as against its record.
   */
  recentTokens: number;
  recentCost: number;
  recentRounds: number;
  /** Rounds since its previous round, at its latest round. */
  gap: number;
  samples: number;
  /**
   * Under real time, whether the arm has run its first round in this drafter (that round is not counted: its code
   * still runs cold, its model calls meet new shapes, and it measured 2-3x slow, enough to keep a fresh install on
   * plain decoding for hundreds of rounds).
   */
  warmed: boolean;
  /** Rounds of this arm counted by this drafter (its first COLD_ROUNDS cannot lower a remembered record). */
  counted: number;
  /** The throughput remembered for it from an earlier session (0: none). */
  recalled: number;
  /** Round index this arm last ran in. */
  lastRound: number;
  /** Round index this arm was last refreshed in while set aside (refreshSetAside()). */
  refreshedAt: number;
  /** Round index when a replay last credited a round not yet decided (Counterfactual.credits); -1: none standing. */
  creditedAt: number;
  /** Cost of its latest round (for the weight of a remembered estimate). */
  roundCost: number;
  /** Whether its estimate comes from memory only (no round of its own measured by this drafter yet). */
  remembered: boolean;
  /** Sessions (drafters) since its last measured round, this one counted; 0 once it has one here. */
  staleSessions: number;
  /**
   * What a prediction (ArmSpec.prior) put in its record: samples, and tokens and cost (faded with the rest). They
   * settle it in this session, but what is remembered for the next rests on its own rounds alone (save()).
   */
  priorSamples: number;
  priorTokens: number;
  priorCost: number;
  /** Whether its record is a prediction only (ArmSpec.prior), no round of its own measured or replayed yet. */
  predicted: boolean;
}

/**
 * Where auto remembers its arms' throughput between generations and sessions (greedy decoding only: the arm drafted
 * from shapes a sample, so under sampling a remembered choice would make a seed's text depend on history). A short
 * run (the CLI's 64 tokens are about 40 rounds) then starts on the arm that was best instead of paying for trying
 * every arm again.
 */
export interface AutoMemory {
  store: KeyValueStore;
  key: string;
}

interface AutoRecord {
  version: 1;
  /**
   * Per arm: tokens per second, the seconds of its latest round, the rounds auto has run since the arm last ran one
   * (its revisit clock), the sessions since it last did, and how many measured rounds the estimate rests on (up to
   * SETTLED_SAMPLES; the last three absent in older records).
   */
  arms: Record<
    string,
    | { throughput: number; roundCost: number; idle?: number; sessions?: number; samples?: number }
    // An arm known from its prediction alone (ArmSpec.prior): only its revisit clock, the next session predicts it again.
    | { predicted: true; idle: number; sessions: number }
  >;
}

/** A remembered estimate counts as this many rounds of the arm's own (fresh rounds soon outweigh it). */
const REMEMBERED_ROUNDS = 2;
/**
 * The most tokens a round can bring: the deepest tree any arm drafts (64 nodes, the widest verify call calibrated)
 * and the target's own token. A remembered record saying more, or a round cheaper than half a single-token target
 * call (a round makes at least one), is no measurement of this engine's: a hand-edited plain-decoding record of
 * 1e300 tok/s kept auto on plain decoding for 29 of 32 rounds. Such a record is left out, and the arm measured again.
 */
const MAX_ROUND_TOKENS = 65;
/** Rounds between saves of the estimates (and at the end of every generation: AutoDrafter.finish). */
const SAVE_EVERY = 8;
/**
 * Sessions an arm's remembered estimate is trusted without a measured round of its own: in the next one it is
 * revisited whatever its revisit clock says. A session of the CLI is about 40 rounds, and a wait scheduled by how far
 * behind an arm looks reaches 256 rounds (REVISIT_MAX): an estimate taken at a bad moment (a revisit in a slow cold
 * process: the draft model's chain at 143 tok/s against plain decoding's 235, where it ran at 300-400 on its own) kept
 * `npm run generate` on plain decoding for 7 runs in 8. A revisit every fourth session costs about VISIT_ROUNDS x the
 * arm's gap in 160 rounds: 1% of the time for an arm half as fast.
 */
const STALE_SESSIONS = 3;

/**
 * Discount per round (of any arm) of every arm's history: recent rounds weigh more. The window (about 33 rounds)
 * is long because one round says little: a chain's round brings 1 to 4 tokens, and a 10-round window let streaks
 * of luck move auto between arms that differ by a few percent (interleaved, 20 prompts x 2 on wasm: auto 1.04x over
 * plain decoding with 0.9, 1.08x with 0.95, 1.10x with 0.97, the adaptive chain alone 1.11x).
 */
const DECAY = 0.97;
/** Rounds each arm is tried before the choice is made on measurements. */
const WARMUP_SAMPLES = 2;
/**
 * Until an arm has this many measured rounds, it is revisited after REVISIT_MIN rounds however far behind it looks:
 * a couple of rounds are too few to trust (a pause, a cold start) and a wrong early verdict would otherwise stand for
 * up to REVISIT_MAX rounds.
 */
const SETTLED_SAMPLES = 6;
/**
 * Revisiting a non-chosen arm costs its gap to the best arm for one round. An arm whose estimate is the share g
 * below the best waits g / EXPLORE_SHARE rounds (between REVISIT_MIN and REVISIT_MAX), so each arm's revisits cost
 * about EXPLORE_SHARE of the throughput however far behind it is: close arms are checked often (cheap, and they
 * may overtake), far ones rarely.
 */
const EXPLORE_SHARE = 0.004;
const REVISIT_MIN = 12;
const REVISIT_MAX = 256;
/**
 * Measured rounds the first revisit of an arm known only from memory lasts (its wait is as many times longer, so
 * the revisit costs the same share). A session of the CLI is about 40 rounds, so such a revisit is often the only
 * one a session makes, and one round says little: the tokens a round brings range from 1 to 6 and more, and
 * single-round revisits at unlucky places (nothing accepted) held the merged chain's estimate at 0.53-0.69x plain
 * decoding's through the CLI, where it ran at 1.2-1.4x on its own (int8 pair, 64 tokens).
 */
const VISIT_ROUNDS = 3;
/**
 * Rounds an arm that can refresh (the draft model's chain) sits aside between refreshes: each catches it up on the
 * text since and replays its rounds over it (refreshSetAside()).
 */
const REFRESH_ROUNDS = 4;
/**
 * Discount per round of its own of an arm's recent record (a window of about 5 rounds). An arm whose rounds come in
 * runs (ArmSpec.runs), in steady use (no pause longer than RECENT_GAP rounds, RECENT_ROUNDS of the window's 5
 * filled), whose recent throughput fell to less
 * than 1 / (1 + RUN_ENDED_MARGIN) of its record has its record replaced by the recent one: the rounds before were
 * another regime (a run of matches that ended), and its record would otherwise hold it in front, and schedule the
 * other arms' revisits, until it faded. Measured on lavapipe with the EAGLE head, before this: prompt lookup's run
 * over a repeating text (10.8 tok/s) kept it in front through 60 rounds without a match at 2.7 tok/s, while the
 * head's arm (6 tok/s once its values were learned, 3.5 on its first rounds) waited for revisits scheduled on
 * lookup's record.
 */
const RECENT_DECAY = 0.8;
const RECENT_ROUNDS = 3;
const RECENT_GAP = 8;
/**
 * How much dearer (a share, on the measured curve) the call may get for a riding arm's auxiliary nodes. On an H100
 * lookahead's 14-node window costs nothing (T(64)/T(1) = 1.00-1.03); on SwiftShader (T(8) 1.05, T(22) about 1.25)
 * it made every round of auto's arms about a fifth dearer, and auto fell from 99% of the adaptive chain to 79%
 * (2 prompts).
 */
const RIDE_MARGIN = 0.05;

/**
 * A riding arm whose settled record has fallen below this share of the leading arm's no longer rides along: its window
 * costs more than the curve says. On an H200, with the draft model on the CPU and lookahead's window (14 nodes) riding
 * in every round of the chain arm, those rounds took 1.7, 4.3 and 7.0 ms more than the adaptive chain's alone in the
 * same processes (42-44 against 37-41 ms, at the same chain widths), and in a process where the window mostly did not
 * ride, the same (50.6 against 50.7 ms); lookahead's own rounds brought 1.0 tokens each (27 tok/s against the chain
 * arm's 99). The calibrated curve called the wider call free (T(32)/T(1) 0.98-0.99). Where lookahead was the best
 * method (an H200 with the draft model on the GPU, 2026-11-27: 1.88-1.89x; its rounds in auto brought 1.0-2.5 tokens
 * in one call each, the draft model's tree's 3.0 in a call plus draft calls of 0.4-0.6 of one) it was likely above
 * the share, not shown. Not re-measured on a GPU since: no device time was left.
 */
const RIDE_CONTENTION = 0.5;

/** How far ahead (a share of its throughput) an arm must be to displace the arm in use. */
const SWITCH_MARGIN = 0.05;
/**
 * How far below its record an arm's recent throughput must fall for the record to be replaced: to less than half.
 * Noise alone does not get there: an arm bringing 1 to 6 tokens a round at random (the noisy arm of auto.test.ts)
 * never did in 12 seeds x 1100 rounds; at a third below (0.5) it did often enough to cost it a fifth of its rounds.
 */
const RUN_ENDED_MARGIN = 1;

/**
 * A round's measured time counts for at most this many times what the measured costs predict for it (its verify
 * call's width on the curve and its own model calls). A pause that has nothing to do with the arm (garbage
 * collection, V8 compiling, another process) lands on whichever round it falls in, and one arm's estimate rests on
 * few rounds at first and after a revisit: tracing auto on wasm in Node, one 17.6 ms round among the two that tried
 * the draft model's chain (its rounds take 6-7 ms, predicted 7.5) put it at 159 tok/s against plain decoding's 260,
 * and its next revisit, 12 rounds on, met another (17.7 ms): plain decoding ran on where the chain brought 370.
 * Rounds of 1.5x to 2.5x the typical time came every ten rounds or so, in every arm.
 */
const PAUSE_CAP = 2;
/**
 * An arm remembered from an earlier session: its first rounds counted in this one (after the uncounted first) count
 * as no slower than the remembered throughput, so they can raise its record but not lower it. Its code is still cold
 * after one round in a fresh process: through the CLI (a process per run, the records remembered), the draft model's
 * chain took 8-13 ms for its second round in the process and 5-7 ms for its third, where its rounds of the same width
 * took 3.5-5 ms later; one such round on an opening the chain guesses badly (nothing accepted) put its record under
 * plain decoding's (265 against 395 tok/s), and the next runs stayed on plain decoding (6 fresh processes on one
 * prompt, each with the last one's records: 2 on plain decoding throughout, 2 for 35-40 of their 60 rounds). From
 * the fourth counted round on, its rounds count as they come.
 */
const COLD_ROUNDS = 3;

/**
 * How far ahead of the chosen arm's throughput (a share) a copy in progress must be predicted to take the round.
 * Prompt lookup's prediction comes from its measured acceptance per agreement length and the verify-cost curve; the
 * arm's from its real rounds, overhead included, so the prediction is held to a margin.
 */
const COPY_MARGIN = 0.25;

/**
 * Rounds a non-chosen arm waits before it is revisited, from its throughput and the best one's, for a revisit of
 * `visitRounds` rounds.
 */
export function revisitAfter(armThroughput: number, bestThroughput: number, visitRounds = 1): number {
  const gap = bestThroughput > 0 ? Math.max(0, 1 - armThroughput / bestThroughput) : 0;
  return Math.min(REVISIT_MAX, Math.max(REVISIT_MIN, Math.round((visitRounds * gap) / EXPLORE_SHARE)));
}

/** An arm's measurements before any round: a new drafter's, and a sampled generation's start (AutoDrafter.reset). */
const UNMEASURED = {
  tokens: 0,
  cost: 0,
  recentTokens: 0,
  recentCost: 0,
  recentRounds: 0,
  gap: 0,
  samples: 0,
  warmed: false,
  counted: 0,
  recalled: 0,
  lastRound: -1,
  refreshedAt: -1,
  creditedAt: -1,
  roundCost: 0,
  remembered: false,
  staleSessions: 0,
  priorSamples: 0,
  priorTokens: 0,
  priorCost: 0,
  predicted: false,
} as const;

export class AutoDrafter implements Drafter {
  readonly name = 'auto';
  private readonly arms: Arm[];
  private current: Arm;
  private round = 0;
  /**
   * Rounds of the current generation so far (reset() starts a generation). A generation's first round brings about
   * half what its later rounds bring, whatever drafts it (greedy traces on an H200 and on lavapipe: the adaptive
   * chain 2.85 tokens against 5.11, the EAGLE head 3.21 against 5.56, merged 2.92 against 4.88; the second round
   * 4.0-4.45): the text just after a prompt is the hardest to guess. A revisit there measures an arm at about half its
   * worth, and its verdict stands until the next revisit, tens of rounds on. So no revisit is made in a generation's
   * first round, nor carried into it from the last generation: 6 of 54 revisits in those traces fell there, and on
   * lavapipe a visit rolled over from a generation's last round (not counted: it reached the depth still wanted) into
   * the next one's first, where the draft model's chain brought 1 token (5.6 a round later in the run), and auto
   * drafted with the EAGLE head through most of the next 24 rounds (0.80 of the chain alone per run).
   */
  private generationRound = 0;
  /** The arm chosen on measurements last time (revisits aside). */
  private incumbent: Arm | null = null;
  private measure: 'model' | 'time' = 'time';
  private draftCalls = 0;
  private started = 0;
  /** Why this round's arm was chosen, put in words only when the note's text is read. */
  private why: () => string = () => '';
  private restored: Promise<void> | null = null;
  private saving: Promise<void> | null = null;
  /**
   * The arm being visited and the measured rounds it still runs: a revisit of a settled arm, or an arm whose round
   * was its first here (not counted), which runs the next round too so that its visit measures it.
   */
  private visit: { arm: Arm; left: number } | null = null;
  /** An arm whose run ended in the latest round (its record replaced by its recent rounds), for the next note. */
  private ended: string | null = null;
  /** The chosen arm's rounds replayed over the text it caught up on this round, added to its record (replay()). */
  private replayed: Counterfactual | null = null;
  /** Arms refreshed this round and what their replay added (refreshSetAside()), for the note. */
  private refreshed: (Counterfactual & { name: string })[] = [];
  /** This generation's copy rounds: the positions in the committed text of the tokens each brought, [from, to). */
  private copySpans: [number, number][] = [];
  /** The committed length at this round's proposal (where a copy round's tokens begin). */
  private proposedAt = 0;
  /** Whether this round is a copy round (prompt lookup over the chosen arm; counted in no arm's record). */
  private copying = false;
  /**
   * Whether this round's tree reached the depth the request allowed (the tokens still wanted: the generation's end or
   * the context's), so that the cap, not the arm, shaped it.
   */
  private capped = false;

  constructor(
    arms: ArmSpec[],
    private readonly costs: () => CostModel | null = () => null,
    private readonly memory: AutoMemory | null = null,
    /** Milliseconds on a monotonic clock: a round's real time under greedy decoding (tests pass a virtual one). */
    private readonly clock: () => number = () => performance.now(),
  ) {
    this.arms = arms.map((a) => ({ ...a, ...UNMEASURED }));
    this.current = (this.arms.find((a) => !a.copyOnly) ?? this.arms[0]) as Arm;
  }

  /** Back to the state of a new drafter: nothing measured, nothing restored from memory yet. */
  private forget(): void {
    for (const a of this.arms) Object.assign(a, UNMEASURED);
    this.current = (this.arms.find((a) => !a.copyOnly) ?? this.arms[0]) as Arm;
    this.round = 0;
    this.incumbent = null;
    this.visit = null;
    this.ended = null;
    this.restored = null;
  }

  /** Once per drafter, under real time: start from the remembered estimates of the arms this drafter has. */
  private restore(memory: AutoMemory): Promise<void> {
    this.restored ??= safeGet(memory.store, memory.key).then((raw) => {
      const record = raw as Partial<AutoRecord> | null | undefined;
      if (record?.version !== 1 || typeof record.arms !== 'object' || record.arms === null) return;
      for (const arm of this.arms) {
        const r = (record.arms as Record<string, unknown>)[arm.name] as
          | Partial<{ throughput: number; roundCost: number; idle: number; sessions: number; samples: number }>
          | undefined;
        const { throughput, roundCost, idle, sessions, samples } = r ?? {};
        if (arm.samples > 0) continue;
        if (arm.prior && (r as { predicted?: unknown } | undefined)?.predicted === true) {
          this.restoreClock(arm, idle, sessions);
          continue;
        }
        if (typeof throughput !== 'number' || typeof roundCost !== 'number') continue;
        if (!(throughput >= 0 && Number.isFinite(throughput) && roundCost > 0 && Number.isFinite(roundCost))) continue;
        if (!this.plausible(throughput, roundCost)) continue;
        arm.cost = REMEMBERED_ROUNDS * roundCost;
        arm.tokens = throughput * arm.cost;
        // Settled: revisited by how far behind it is, not every REVISIT_MIN rounds. A CLI run is about 40 rounds, and
        // the revisits every 12 rounds a fresh estimate gets went mostly to plain decoding. But an estimate that rests
        // on fewer measured rounds than SETTLED_SAMPLES is no more settled for having been remembered, unless the
        // calibration predicts the arm's round (plain decoding): a draft model's chain tried in the first rounds of
        // a generation on SwiftShader (2 rounds of 1 token where it brings 3.7) was remembered as settled, and the
        // next generation never revisited it (auto 1.88-2.28x where the adaptive chain made 2.46-2.68x).
        const measured =
          typeof samples === 'number' && Number.isFinite(samples) ? Math.round(samples) : SETTLED_SAMPLES;
        arm.samples =
          arm.prior && !arm.estimated ? SETTLED_SAMPLES : Math.min(SETTLED_SAMPLES, Math.max(WARMUP_SAMPLES, measured));
        arm.roundCost = roundCost;
        arm.remembered = true;
        arm.recalled = throughput;
        // The revisit clock goes on from where the last session left it. Restarted with every session, an arm
        // remembered far behind (a revisit due after 75 rounds or more) was never revisited by runs shorter than
        // that, its record never corrected: the CLI's int8 pair decoded plain for good on one slow early estimate
        // of the merged chain (182 against plain's 262 tok/s), which ran at 297-346 tok/s on its own.
        this.restoreClock(arm, idle, sessions);
      }
    });
    return this.restored;
  }

  /** Whether a remembered round could have been measured here (MAX_ROUND_TOKENS; unknown costs: any). */
  private plausible(throughput: number, roundCost: number): boolean {
    const curve = this.costs()?.curve;
    const single = curve ? costIn(curve, 1, this.measure) : null;
    return throughput * roundCost <= MAX_ROUND_TOKENS && (single === null || roundCost >= single / 2);
  }

  /**
   * An arm's revisit clock as the last session left it (rounds since its last round, sessions since its last measured
   * one), and however long the clock says to wait, a record older than STALE_SESSIONS sessions is checked now.
   */
  private restoreClock(arm: Arm, idle: unknown, sessions: unknown): void {
    if (typeof idle === 'number' && idle >= 0 && Number.isFinite(idle)) arm.lastRound = -Math.round(idle);
    const age = typeof sessions === 'number' && sessions >= 0 && Number.isFinite(sessions) ? Math.round(sessions) : 0;
    arm.staleSessions = age + 1;
    if (arm.staleSessions > STALE_SESSIONS) arm.lastRound = -REVISIT_MAX - 1;
  }

  private save(memory: AutoMemory): void {
    if (this.saving) return;
    const arms: AutoRecord['arms'] = {};
    for (const a of this.arms) {
      // What its own rounds say, without what a prediction put in (the next session predicts it again).
      const samples = a.samples - a.priorSamples;
      const cost = a.cost - a.priorCost;
      const throughput = cost > 1e-9 * a.cost ? Math.max(0, a.tokens - a.priorTokens) / cost : Number.NaN;
      const idle = this.round - a.lastRound;
      if (a.samples >= WARMUP_SAMPLES && samples > 0 && Number.isFinite(throughput))
        arms[a.name] = {
          throughput,
          roundCost: a.roundCost,
          idle,
          sessions: a.staleSessions,
          samples: Math.min(samples, SETTLED_SAMPLES),
        };
      // Known from its prediction alone: its revisit clock goes on, so an arm predicted behind is still checked
      // within STALE_SESSIONS sessions however short they are.
      // (This session counts as one without a measured round.)
      else if (a.priorSamples > 0) arms[a.name] = { predicted: true, idle, sessions: Math.max(1, a.staleSessions) };
    }
    this.saving = safeSet(memory.store, memory.key, { version: 1, arms } satisfies AutoRecord).finally(() => {
      this.saving = null;
    });
  }

  /**
   * The generation ended: save the estimates now, so that a revisit in its last rounds (since the latest save, every
   * SAVE_EVERY rounds) is not lost, nor the revisit clock, when the process ends with it (the CLI).
   */
  async finish(): Promise<void> {
    if (this.measure !== 'time' || !this.memory || this.round === 0) return;
    await this.saving;
    this.save(this.memory);
    await this.saving;
  }

  /**
   * Arms whose round the measured costs predict (plain decoding: one token for one single-token call), neither
   * measured nor remembered yet, start from that prediction, as settled as a remembered estimate: they are not tried
   * first but revisited by how far behind they look. Trying plain decoding cost 3 rounds and its revisits every 12
   * rounds until it had 6 more: in a CLI run of about 40 rounds, or a WebGPU run on SwiftShader of 44 (2 prompts),
   * about 7 rounds at plain decoding's speed where the chosen arm ran 1.5-2.5x faster. Its prediction errs slow on
   * wasm in Node (5.04 ms a call against 4.79 ms per token) and fast on SwiftShader (946 against 1081 ms), and either
   * way its first revisit measures it.
   */
  private predict(): void {
    const costs = this.costs();
    if (!costs) return;
    for (const arm of this.arms) {
      if (!arm.prior || arm.samples > 0 || arm.cost > 0) continue;
      const round = arm.prior(costs, this.measure);
      if (!round || !(round.tokens > 0 && round.cost > 0 && Number.isFinite(round.tokens / round.cost))) continue;
      arm.cost = REMEMBERED_ROUNDS * round.cost;
      arm.tokens = REMEMBERED_ROUNDS * round.tokens;
      arm.samples = SETTLED_SAMPLES;
      arm.priorSamples = SETTLED_SAMPLES;
      arm.priorTokens = arm.tokens;
      arm.priorCost = arm.cost;
      arm.predicted = true;
      arm.roundCost = round.cost;
    }
  }

  /** Model calls the arms made while drafting (counted per round: arms may share one draft model). */
  get calls(): number {
    return this.draftCalls;
  }

  /** Tokens per unit of cost of an arm: per single-token call on the cost model, or per second (NaN untried). */
  throughput(arm: Arm): number {
    return arm.cost > 0 ? arm.tokens / arm.cost : Number.NaN;
  }

  /** The same over its latest rounds only (Arm.recentTokens; NaN with none). */
  private recentThroughput(arm: Arm): number {
    return arm.recentCost > 0 ? arm.recentTokens / arm.recentCost : Number.NaN;
  }

  private get unit(): string {
    return this.measure === 'model' ? 'tokens/call' : 'tok/s';
  }

  /**
   * What a round's cost is measured in. Under greedy decoding the text is the same whichever arm drafts, so the
   * arms are compared on real time, which also counts what the cost model leaves out (each arm's own overhead:
   * tree building, merging). Not a draft cache catching up on the tokens committed while its arm sat out
   * (Drafter.catchUpMs): that is the price of switching, and it grows with the time spent away, so counted in the
   * arm's time it made each revisit after a stretch of plain decoding look slower than the last and kept a 1.1x
   * draft aside for hundreds of rounds (measured on the bench prompts). Under sampling the arm drafted
   * from shapes the sample, so the comparison uses the cost model alone and a seed gives the same text again on the
   * same measured costs. Without a cost model, real time.
   */
  private measureFor(sampling: DraftRequest['sampling']): 'model' | 'time' {
    return this.costs() && !isGreedy(sampling) ? 'model' : 'time';
  }

  private choose(req: DraftRequest, opening: boolean): Arm {
    const arms = this.arms.filter((a) => !a.copyOnly && (a.when?.(req) ?? true));
    const visit = this.visit;
    if (visit && visit.left > 0 && arms.includes(visit.arm)) {
      const why = visit.arm.samples < WARMUP_SAMPLES ? `trying ${visit.arm.name}` : `revisiting ${visit.arm.name}`;
      this.why = () => why;
      return visit.arm;
    }
    this.visit = null;
    const untried = arms.find((a) => a.samples < WARMUP_SAMPLES);
    if (untried) {
      this.why = () => `trying ${untried.name}`;
      return untried;
    }
    let best = arms.reduce((a, b) => (this.throughput(b) > this.throughput(a) ? b : a));
    // Hysteresis: the arm in use keeps its place unless another is clearly ahead; small leads are noise that
    // switching (a draft cache catching up, estimates settling) would pay for.
    const incumbent = this.incumbent && arms.includes(this.incumbent) ? this.incumbent : null;
    if (incumbent && this.throughput(best) < this.throughput(incumbent) * (1 + SWITCH_MARGIN)) best = incumbent;
    this.incumbent = best;
    // Revisit the arm most overdue (its estimate may be stale), the wait scaled by how far behind it is.
    const top = this.throughput(best);
    const visitRounds = (a: Arm) => (a.remembered ? VISIT_ROUNDS : 1);
    const wait = (a: Arm) =>
      a.samples >= SETTLED_SAMPLES ? revisitAfter(this.throughput(a), top, visitRounds(a)) : REVISIT_MIN;
    const overdue = arms
      .filter((a) => a !== best)
      .map((a) => ({ a, late: this.round - a.lastRound - wait(a) }))
      .filter((x) => x.late >= 0)
      .sort((x, y) => y.late - x.late)[0];
    // Not in a generation's first round (generationRound): the revisit waits a round.
    if (overdue && !opening) {
      this.visit = { arm: overdue.a, left: visitRounds(overdue.a) };
      this.why = () => `revisiting ${overdue.a.name}`;
      return overdue.a;
    }
    // An arm known only from its prediction (ArmSpec.prior: plain decoding's round, a drafter's acceptance prior) says so.
    const shown = arms.map((a) => ({ name: a.name, throughput: this.throughput(a), predicted: a.predicted }));
    const unit = this.unit;
    this.why = () =>
      `best: ${shown.map((a) => `${a.name} ${a.throughput.toFixed(2)}${a.predicted ? ' (predicted)' : ''}`).join(', ')} ${unit}`;
    return best;
  }

  async propose(req: DraftRequest): Promise<DraftTree> {
    const measure = this.measureFor(req.sampling);
    if (measure !== this.measure) {
      // Estimates in another unit say nothing here: measure every arm afresh.
      for (const a of this.arms) {
        const { warmed, gap, counted, refreshedAt, roundCost } = a;
        Object.assign(a, UNMEASURED, { warmed, gap, counted, refreshedAt, roundCost });
      }
      this.incumbent = null;
      this.visit = null;
      this.measure = measure;
    }
    if (measure === 'time' && this.memory) await this.restore(this.memory);
    this.predict();
    this.refreshed = [];
    if (measure === 'time' && this.generationRound > 0) await this.refreshSetAside(req);
    this.proposedAt = req.committed.length;
    this.current = this.choose(req, this.generationRound++ === 0);
    const ended = this.ended;
    const chosen = this.why;
    if (ended) this.why = () => `${chosen()}; ${ended}'s run ended: its latest rounds are its record`;
    this.ended = null;
    const copy = measure === 'time' ? await this.copyRound(req) : null;
    this.copying = copy !== null;
    if (copy) return this.withRider(copy, req);
    this.current.gap = this.round - this.current.lastRound;
    this.current.lastRound = this.round;
    this.started = this.clock();
    const before = this.current.drafter.calls;
    const tree = await this.current.drafter.propose(req);
    this.draftCalls += this.current.drafter.calls - before;
    tree.sources ??= tree.tokens.map((_, i) => (i === 0 ? '' : this.current.name));
    this.capped = Math.max(...depths(tree.parents)) >= req.maxDepth;
    return this.withRider(tree, req);
  }

  /**
   * A riding arm's auxiliary nodes on another arm's tree, where the riding arm may run (ArmSpec.rides), is still in
   * contention (RIDE_CONTENTION), and the measured curve says the wider call costs at most RIDE_MARGIN more.
   */
  private withRider(tree: DraftTree, req: DraftRequest): DraftTree {
    const curve = this.costs()?.curve;
    if (tree.aux || !curve) return tree;
    const leader = this.incumbent;
    const contends = (a: Arm) =>
      a.samples < SETTLED_SAMPLES ||
      !leader ||
      a === leader ||
      !(this.throughput(a) < RIDE_CONTENTION * this.throughput(leader));
    const rider = this.arms.find((a) => a.rides && a !== this.current && (a.when?.(req) ?? true) && contends(a));
    const aux = rider?.drafter.ride?.(req, req.maxNodes - (tree.tokens.length - 1));
    const width = tree.tokens.length;
    if (aux && relativeCost(curve, width + aux.tokens.length) <= relativeCost(curve, width) * (1 + RIDE_MARGIN))
      tree.aux = aux;
    return tree;
  }

  /**
   * A copy round: where the chosen arm does not propose prompt lookup's matches itself, lookup (no model calls) is
   * asked first, and a match predicted to bring clearly more than the chosen arm does (its tokens over the verify
   * call's width on the measured curve, against the arm's measured throughput in single-token calls) is verified
   * instead. Such a round belongs to no arm's record: lookup's record holds its ordinary rounds (a record of its best
   * rounds alone would make it the arm of choice, and its rounds without a match are plain rounds), and the chosen
   * arm did not run. So a drafter that does not copy (the EAGLE head, Medusa's heads, layer skipping) still gets the
   * runs of a text that repeats itself, which only the merged arms got before.
   */
  private async copyRound(req: DraftRequest): Promise<DraftTree | null> {
    const arm = this.current;
    const copier = this.arms.find((a) => a.copier);
    const curve = this.costs()?.curve;
    const t1 = curve ? singleCallMs(curve) : 0;
    if (!copier || !curve || !t1 || arm === copier || arm.copies || !(copier.when?.(req) ?? true)) return null;
    // What the arm brings now: its record, or its latest rounds where they run ahead of it (a chain through a passage
    // it knows: on SwiftShader two copy rounds of 9 tokens took the place of the chain's 17, lookup predicted at 6.90x
    // and 7.84x plain decoding against the chain's record of 4.90x).
    const armSpeedup = (Math.max(this.throughput(arm), this.recentThroughput(arm) || 0) * t1) / 1000;
    if (!(armSpeedup > 0) || arm.samples < WARMUP_SAMPLES) return null;
    const tree = await copier.drafter.propose(req);
    if (tree.tokens.length < 2 || !tree.values) return null;
    const expected = tree.values.reduce((sum, v, i) => sum + (i === 0 ? 1 : v), 0);
    const predicted = expected / relativeCost(curve, tree.tokens.length);
    if (predicted < armSpeedup * (1 + COPY_MARGIN)) return null;
    this.why = () =>
      `copying: lookup predicts ${predicted.toFixed(2)}x plain decoding, ${arm.name} brings ${armSpeedup.toFixed(2)}x`;
    this.current = copier;
    this.started = this.clock();
    tree.sources ??= tree.tokens.map((_, i) => (i === 0 ? '' : copier.name));
    return tree;
  }

  /** Whether this round's arm reads the target's logits (read after propose(): only its rounds fetch them). */
  get readsTargetLogits(): boolean {
    return this.current.drafter.readsTargetLogits === true;
  }

  /** Whether an arm runs on draft heads (the round loop then asks the target for its hidden states). */
  get readsTargetHidden(): boolean {
    return this.arms.some((a) => a.drafter.readsTargetHidden === true);
  }

  prefilled(prompt: readonly number[], hidden: (row: number) => Float32Array): void {
    for (const a of this.arms) a.drafter.prefilled?.(prompt, hidden);
  }

  accept(tree: DraftTree, result: VerifyResult, outputs: TargetOutputs): void {
    const arm = this.current;
    arm.drafter.accept(tree, result, outputs);
    for (const a of this.arms) if (a !== arm) a.drafter.observe?.(tree, result, outputs);
    if (this.copying) {
      this.copySpans.push([this.proposedAt, this.proposedAt + result.path.length]);
      return;
    }
    // The round's tokens (the accepted path plus the target's own) and its cost: real seconds, or on the cost model
    // the verification call's width on the measured curve plus the arm's own model calls.
    const costs = this.costs();
    const width = tree.tokens.length + (tree.aux?.tokens.length ?? 0);
    const modelled = costs ? relativeCost(costs.curve, width) + (arm.drafter.draftCost?.(costs) ?? 0) : Number.NaN;
    const measured =
      this.measure === 'model' && costs
        ? modelled
        : this.timed(arm, modelled * (costs ? singleCallMs(costs.curve) : 0));
    const cost =
      this.measure === 'time' && arm.counted < COLD_ROUNDS && arm.recalled > 0
        ? Math.min(measured, result.path.length / arm.recalled)
        : measured;
    for (const a of this.arms) {
      a.cost *= DECAY;
      a.tokens *= DECAY;
      a.priorCost *= DECAY;
      a.priorTokens *= DECAY;
    }
    this.round++;
    this.replayed = null;
    if (this.measure === 'time' && !arm.warmed) {
      arm.warmed = true;
      if (this.visit?.arm !== arm) this.visit = { arm, left: 1 };
      return;
    }
    if (arm.gap > 1) this.replayed = this.replay(arm);
    // A round whose tree reached the depth still wanted was cut by the generation's end, not by the arm: what it
    // brought says how many tokens were left, not how well the arm drafts, and it is not counted (decided on the
    // proposal, whatever the target then accepted, so no outcome is selected for). Every generation ends in such
    // rounds, and the bench's warm-up generations (8 tokens) are made of them:
    // - on lavapipe with the draft model on wasm, the draft model's chain tried in one ended on a round of 1 token
    //   (its rounds bring 3 to 17), its record fell to 8.5 tok/s against the EAGLE head's 13.9, and the head ran
    //   until the chain's revisit (in a bench run, the chain got 2 of auto's 35 rounds: 0.53 of the chain alone);
    // - counting only the rounds that brought every token wanted, on an H200 the chain's record came out of the
    //   bench's 8-token warm-up at 72-73 tok/s (its chains there cut to 7 tokens or fewer; in the timed runs it drafts
    //   up to 13), where it ran at 130 alone; the EAGLE head (99-110) led, and auto ran at 0.74-0.80 of the chain
    //   alone, revisiting the chain 4-5 times.
    if (this.capped) return;
    arm.cost += cost;
    arm.tokens += result.path.length;
    const keep = arm.gap > RECENT_GAP ? 0 : RECENT_DECAY;
    arm.recentCost = keep * arm.recentCost + cost;
    arm.recentTokens = keep * arm.recentTokens + result.path.length;
    arm.recentRounds = keep * arm.recentRounds + 1;
    arm.samples++;
    arm.counted++;
    // A run that has ended (an arm whose rounds come in runs): the record is the recent rounds from here on. Resting
    // on a few rounds, it is not settled (revisited after REVISIT_MIN rounds, however far behind it looks, until it
    // is again): a stretch of bad rounds can look like a run's end too, and then the arm's record says less than it
    // did. At the opening of a prompt on wasm, five rounds of one token each where the merged chain brings 2.1 a round
    // put its record at 150 tok/s against 323, and with a revisit scheduled by how far behind that put it (after about
    // 100 rounds), auto stayed on prompt lookup, at plain decoding's speed, for 130 rounds over three prompts.
    if (
      arm.runs &&
      arm.samples >= SETTLED_SAMPLES &&
      arm.recentRounds >= RECENT_ROUNDS &&
      this.recentThroughput(arm) * (1 + RUN_ENDED_MARGIN) < this.throughput(arm)
    ) {
      arm.tokens = arm.recentTokens;
      arm.cost = arm.recentCost;
      arm.creditedAt = -1; // a replay's credit is not in these
      arm.samples = Math.floor(arm.recentRounds);
      Object.assign(arm, { priorSamples: 0, priorTokens: 0, priorCost: 0 });
      this.ended = arm.name;
    }
    arm.roundCost = cost;
    if (this.visit?.arm === arm) this.visit.left--;
    arm.remembered = false;
    arm.predicted = false;
    arm.staleSessions = 0;
    if (this.measure === 'time' && this.memory && this.round % SAVE_EVERY === 0) this.save(this.memory);
  }

  /**
   * An arm back after rounds other arms drafted adds its rounds replayed over the text it caught up on
   * (Drafter.counterfactual) to its record, so it is judged on the text the leading arm met, not only on the few
   * rounds of each revisit; not over copy rounds' text (prompt lookup's best stretches, counted in no record), and
   * not in its uncounted first round. Under real time only (greedy: the replay needs the target's own tokens).
   */
  private replay(arm: Arm): Counterfactual | null {
    if (this.measure !== 'time') return null;
    const spans = this.copySpans;
    const r = arm.drafter.counterfactual?.((p) => spans.some(([from, to]) => p >= from && p < to));
    if (!r || !Number.isFinite(r.tokens) || !Number.isFinite(r.ms)) return null;
    // A round credited before it was decided is in the record already, faded by DECAY a round since it went in: that
    // much comes out, as the replay now counts the round in full.
    const retract = r.retract && arm.creditedAt >= 0 ? r.retract : null;
    const faded = retract ? DECAY ** (this.round - arm.creditedAt) : 0;
    const tokens = r.tokens - (retract ? retract.tokens * faded : 0);
    const ms = r.ms - (retract ? retract.ms * faded : 0);
    arm.creditedAt = r.credits ? this.round : -1;
    // Into the record, not into the rounds measured: an arm is settled (revisited by how far behind it is, not every
    // REVISIT_MIN rounds) on rounds of its own.
    arm.tokens = Math.max(0, arm.tokens + tokens);
    arm.cost = Math.max(0, arm.cost + ms / 1000);
    arm.predicted = false;
    return { rounds: r.rounds - (retract ? retract.rounds : 0), tokens, ms };
  }

  /**
   * Arms set aside for REFRESH_ROUNDS rounds or more (not the one in use, not one still to run its uncounted first
   * round) catch up on the text since (Drafter.refresh) and add their replay over it to their record, so that auto
   * takes one back as soon as it leads, not only at its next revisit (which waits longer the further behind the arm
   * looked). The catch-up is the one the arm's next round would make, made earlier; its calls count as draft calls.
   */
  private async refreshSetAside(req: DraftRequest): Promise<void> {
    for (const arm of this.arms) {
      if (!arm.drafter.refresh || arm === this.incumbent || !arm.warmed || !(arm.when?.(req) ?? true)) continue;
      if (this.round - Math.max(arm.lastRound, arm.refreshedAt) < REFRESH_ROUNDS) continue;
      arm.refreshedAt = this.round;
      // The refreshed arm's own calls, as a round counts them (arms may share one draft model: counted once).
      const before = arm.drafter.calls;
      await arm.drafter.refresh(req);
      // Caught up on nothing (no call): its replay is the last one's, already in the record.
      if (arm.drafter.calls === before) continue;
      this.draftCalls += arm.drafter.calls - before;
      const r = this.replay(arm);
      if (r) this.refreshed.push({ name: arm.name, ...r });
    }
  }

  /** The chosen arm's catching up this round (a copy round's arm did not run: none). */
  catchUpMs(): number {
    return this.copying ? 0 : (this.current.drafter.catchUpMs?.() ?? 0);
  }

  /**
   * A round's real seconds (less a draft cache's catching up), at most PAUSE_CAP times what the measured costs
   * predict for it (`predictedMs`; not a number: no cap).
   */
  private timed(arm: Arm, predictedMs: number): number {
    const ms = this.clock() - this.started - (arm.drafter.catchUpMs?.() ?? 0);
    return (predictedMs > 0 ? Math.min(ms, PAUSE_CAP * predictedMs) : ms) / 1000;
  }

  learned(): unknown {
    return Object.fromEntries(this.arms.map((a) => [a.name, a.drafter.learned?.()]));
  }

  relearn(state: unknown): void {
    if (typeof state !== 'object' || state === null) return;
    for (const a of this.arms) a.drafter.relearn?.((state as Record<string, unknown>)[a.name]);
  }

  reset(keepLearned = false): void {
    for (const a of this.arms) a.drafter.reset(keepLearned);
    // A sampled generation (keepLearned false) starts from nothing measured, as every other drafter does: its arms'
    // choices rest on the cost model and this generation's verdicts alone, so a seed gives the same text again on the
    // same measured costs, whatever ran before on this engine.
    if (!keepLearned) this.forget();
    // A new generation is a new text: each arm's latest rounds start afresh (its record stays). A run of matches at
    // the end of the last text says about this one only what the record says, and counted among the latest rounds
    // it kept the run-ended rule from seeing that the run was over: on lavapipe, prompt lookup, revisited where a
    // prompt began to repeat itself (two rounds of 8-9 tokens), led the next prompt through 11 rounds without a
    // match, at half the EAGLE head's tokens per second.
    for (const a of this.arms) Object.assign(a, { recentTokens: 0, recentCost: 0, recentRounds: 0 });
    // A visit left over from the last generation (its last rounds reach the depth still wanted and are not counted)
    // would measure the arm on this one's first round: revisits wait for the second (generationRound).
    this.generationRound = 0;
    this.visit = null;
    this.replayed = null;
    this.copySpans = [];
  }

  note(): DrafterNote | null {
    const inner = this.current.drafter.note?.();
    const name = this.current.name;
    const why = this.why;
    // A copy round is prompt lookup's, over the arm chosen: told apart in the run's rounds per drafter.
    const fields: Record<string, number | string> = { arm: this.copying ? `${name} (copy)` : name };
    const replayed = this.copying ? null : this.replayed;
    if (replayed) {
      fields['replayed rounds'] = replayed.rounds;
      fields['replayed tokens'] = Math.round(replayed.tokens * 10) / 10;
    }
    const refreshed = this.refreshed;
    const unit = this.unit;
    for (const a of this.arms) fields[`${a.name} ${unit}`] = Math.round(this.throughput(a) * 100) / 100;
    Object.assign(fields, inner?.fields);
    // The text is put together when it is read (the page's round view, a trace), not in every round of a run.
    return {
      get text() {
        const replay = [
          ...(replayed ? [{ name: '', ...replayed }] : []),
          ...refreshed.map((r) => ({ ...r, name: `${r.name} ` })),
        ]
          .map(
            (r) =>
              `; ${r.name}replayed over text others drafted: ${Math.round(r.tokens * 10) / 10} tokens in ${r.rounds} rounds, ${Math.round(r.ms)} ms`,
          )
          .join('');
        return `auto: ${name} (${why()})${replay}${inner ? `; ${inner.text}` : ''}`;
      },
      fields,
    };
  }
}

/**
 * The key auto's estimates are remembered under: the target and the draft model (their precision and device), and
 * the arms it has. Models that do not say who they are (test doubles) are not remembered.
 */
function autoMemory(r: DrafterResources, arms: readonly { name: string }[]): AutoMemory | null {
  const id = (m: unknown) => (m as { fingerprint?: unknown } | undefined)?.fingerprint;
  const target = id(r.target);
  if (!r.store || typeof target !== 'string') return null;
  const names = arms.map((a) => a.name).join('+');
  return { store: r.store, key: `auto:${target}:${String(id(r.draft) ?? 'none')}:${r.heads?.spec ?? 'none'}:${names}` };
}

export const auto = {
  name: 'auto',
  description:
    'picks the drafter (none, prompt lookup, draft model, layer skipping, draft heads) and the tree size from what it measures',
  needs: [],
  optional: ['draft-model', 'target-self', 'eagle-head', 'medusa-heads', 'target-hidden'],
  lossless: true,
  usesCostModel: true,
  create: (r) => {
    const arms = autoArms(r);
    return new AutoDrafter(arms, r.costs, autoMemory(r, arms));
  },
} as const satisfies MethodSpec<'auto'>;
