/** What the engine reports: one RoundEvent per speculative round, and a summary at the end. */
import type { DrafterNote } from './drafters/drafter';
import type { NodeStatus } from './verify';

export interface TokenPiece {
  id: number;
  /** Decoded text of this token in context (may be '' for a partial UTF-8 character completed later). */
  text: string;
}

export interface RoundEvent {
  round: number;
  /** Draft tokens the target accepted (green). */
  accepted: TokenPiece[];
  /** Draft tokens the target rejected (red): the draft's continuation from the point of divergence. */
  rejected: TokenPiece[];
  /** Tokens the target produced itself (blue): the correction after a rejection or the bonus after a full accept. */
  target: TokenPiece[];
  targetKind: 'correction' | 'bonus' | 'none';
  /** The tree the target verified this round; node 0 is the root (the previous round's last token). */
  tree: {
    tokens: number[];
    texts: string[];
    parents: number[];
    status: NodeStatus[];
    /** Which drafter proposed each node (merged drafting). */
    sources?: string[];
    /** Nodes that rode along in the target call without being verified (lookahead's Jacobi window). */
    aux?: { tokens: number[]; texts: string[] };
  };
  /** The drafter's own account of this round (what it matched, chose or skipped). */
  note?: DrafterNote;
  /** Running totals. */
  /** targetBytes: bytes the target's verifying calls returned so far (logits rows, or token ids under greedy). */
  counts: { targetCalls: number; draftCalls: number; tokens: number; targetBytes: number };
  timings: { draftMs: number; verifyMs: number; overheadMs: number; totalMs: number };
}

export type StopReason = 'eos' | 'max-tokens' | 'context' | 'cancelled' | 'error';

export interface GenerationStats {
  /** Generated tokens per verifying target call (prefill excluded). */
  tau: number;
  /** Acceptance rate at depth 1, 2, …: accepted / offered, where offered means the path reached depth-1 with a child to try. */
  acceptanceByDepth: number[];
  /** The counts behind acceptanceByDepth (to aggregate over runs). */
  acceptanceCounts: { offered: number[]; accepted: number[] };
  /** Mean number of tree nodes (root included) the target verified per round. */
  meanTreeSize: number;
  /** Mean width of the round's target call: tree nodes plus auxiliary nodes. */
  meanCallWidth: number;
  rounds: number;
  /** Target calls including the prefill. */
  targetCalls: number;
  draftCalls: number;
  tokens: number;
  tokensPerSecond: number;
  wallMs: number;
  prefillMs: number;
  draftMs: number;
  verifyMs: number;
  overheadMs: number;
  /** Share of round time spent outside model calls. */
  overheadShare: number;
  /** Bytes the target's verifying calls returned (what a GPU has to download), in all and per round. */
  targetBytes: number;
  targetBytesPerRound: number;
  /**
   * Rounds per drafter, for a method that picks one each round (auto; its note names the arm): rounds, the tokens
   * they produced and their time, in order of first use. Absent for methods that do not say.
   */
  arms?: ArmStats[];
}

export interface ArmStats {
  name: string;
  rounds: number;
  tokens: number;
  ms: number;
}

export interface GenerationResult {
  tokens: number[];
  text: string;
  stopReason: StopReason;
  stats: GenerationStats;
  /**
   * With stopReason 'context', where the context was shorter than the target's: the limit in tokens and whose it is
   * ("the draft model's context", for a method that needs it; or "the context limit asked for").
   */
  context?: { limit: number; of: string };
}

/**
 * A generation failed part-way: `partial` holds everything generated before the failure (text, tokens, stats with
 * stopReason 'error'), and the engine is usable again. The name and message are the cause's.
 */
export class GenerationError extends Error {
  constructor(
    override readonly cause: Error,
    readonly partial: GenerationResult,
  ) {
    super(cause.message);
    this.name = cause.name;
  }
}
