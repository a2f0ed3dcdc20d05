/** What the engine reports: one RoundEvent per speculative round, and a summary at the end. */
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
  tree: { tokens: number[]; texts: string[]; parents: number[]; status: NodeStatus[] };
  /** Running totals. */
  counts: { targetCalls: number; draftCalls: number; tokens: number };
  timings: { draftMs: number; verifyMs: number; overheadMs: number; totalMs: number };
}

export type StopReason = 'eos' | 'max-tokens' | 'context' | 'cancelled';

export interface GenerationStats {
  /** Generated tokens per verifying target call (prefill excluded). */
  tau: number;
  /** Acceptance rate at depth 1, 2, …: accepted / offered, where offered means the path reached depth-1 with a child to try. */
  acceptanceByDepth: number[];
  /** The counts behind acceptanceByDepth (to aggregate over runs). */
  acceptanceCounts: { offered: number[]; accepted: number[] };
  /** Mean number of tree nodes (root included) the target verified per round. */
  meanTreeSize: number;
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
}

export interface GenerationResult {
  tokens: number[];
  text: string;
  stopReason: StopReason;
  stats: GenerationStats;
}
