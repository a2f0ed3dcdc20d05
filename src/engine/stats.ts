/** Running statistics of a generation: tau, acceptance per depth, call counts, time split. */
import type { ArmStats, GenerationStats, RoundEvent } from './events';
import type { VerifyResult } from './verify';

export class StatsTracker {
  private offered: number[] = [];
  private accepted: number[] = [];
  rounds = 0;
  tokens = 0;
  private treeNodes = 0;
  private callWidth = 0;
  verifyCalls = 0;
  prefillCalls = 0;
  draftMs = 0;
  verifyMs = 0;
  overheadMs = 0;
  prefillMs = 0;
  /** Bytes the verifying target calls returned. */
  targetBytes = 0;
  /** Rounds per drafter, where the drafter's note names one (auto's arm). */
  private readonly arms = new Map<string, ArmStats>();
  private readonly started = performance.now();

  /** Record one round: the tree, its verification and the tokens it produced. */
  round(
    parents: readonly number[],
    result: VerifyResult,
    produced: number,
    ms: { draft: number; verify: number; total: number },
    auxNodes = 0,
    targetBytes = 0,
    arm?: string,
  ): void {
    this.rounds++;
    if (arm !== undefined) addArm(this.arms, { name: arm, rounds: 1, tokens: produced, ms: ms.total });
    this.targetBytes += targetBytes;
    this.verifyCalls++;
    this.treeNodes += parents.length;
    this.callWidth += parents.length + auxNodes;
    this.tokens += produced;
    this.draftMs += ms.draft;
    this.verifyMs += ms.verify;
    this.overheadMs += Math.max(0, ms.total - ms.draft - ms.verify);
    // Depth d was offered if the accepted path reached depth d-1 and that node had children to try.
    const hasChildren = new Set(parents.filter((p) => p >= 0));
    result.path.forEach((node, depth) => {
      if (!hasChildren.has(node)) return;
      this.offered[depth] = (this.offered[depth] ?? 0) + 1;
      if (depth + 1 < result.path.length) this.accepted[depth] = (this.accepted[depth] ?? 0) + 1;
    });
  }

  summary(draftCalls: number): GenerationStats {
    const wallMs = performance.now() - this.started;
    const roundMs = this.draftMs + this.verifyMs + this.overheadMs;
    return {
      tau: this.verifyCalls > 0 ? this.tokens / this.verifyCalls : 0,
      acceptanceByDepth: this.offered.map((o, d) => (o > 0 ? (this.accepted[d] ?? 0) / o : 0)),
      acceptanceCounts: { offered: [...this.offered], accepted: this.offered.map((_, d) => this.accepted[d] ?? 0) },
      meanTreeSize: this.rounds > 0 ? this.treeNodes / this.rounds : 0,
      meanCallWidth: this.rounds > 0 ? this.callWidth / this.rounds : 0,
      rounds: this.rounds,
      targetCalls: this.verifyCalls + this.prefillCalls,
      draftCalls,
      tokens: this.tokens,
      tokensPerSecond: roundMs > 0 ? (1000 * this.tokens) / roundMs : 0,
      wallMs,
      prefillMs: this.prefillMs,
      draftMs: this.draftMs,
      verifyMs: this.verifyMs,
      overheadMs: this.overheadMs,
      overheadShare: roundMs > 0 ? this.overheadMs / roundMs : 0,
      targetBytes: this.targetBytes,
      targetBytesPerRound: this.rounds > 0 ? this.targetBytes / this.rounds : 0,
      ...(this.arms.size > 0 ? { arms: [...this.arms.values()].map((a) => ({ ...a })) } : {}),
    };
  }
}

/** Add rounds of a drafter into per-drafter sums (kept in order of first use). */
export function addArm(sums: Map<string, ArmStats>, a: ArmStats): void {
  const sum = sums.get(a.name);
  if (sum) Object.assign(sum, { rounds: sum.rounds + a.rounds, tokens: sum.tokens + a.tokens, ms: sum.ms + a.ms });
  else sums.set(a.name, { ...a });
}

/** The drafter a round's note names (auto's `arm` field), if any. */
export function armOf(note: RoundEvent['note']): string | undefined {
  const arm = note?.fields?.arm;
  return typeof arm === 'string' ? arm : undefined;
}

/** Rounds per drafter, as text: "eagle 12 (4.2 tokens each), lookup (copy) 2 (8.0 tokens each)". */
export function armsText(arms: readonly ArmStats[]): string {
  return arms.map((a) => `${a.name} ${a.rounds} (${(a.tokens / a.rounds).toFixed(1)} tokens each)`).join(', ');
}

/** The same statistics rebuilt from round events (a UI's live view; prefill not included). */
export function statsFromEvents(events: readonly RoundEvent[]): GenerationStats {
  const t = new StatsTracker();
  let bytesSoFar = 0;
  for (const e of events) {
    const bytes = (e.counts.targetBytes ?? bytesSoFar) - bytesSoFar;
    bytesSoFar += bytes;
    const path = [0, ...e.tree.status.flatMap((s, i) => (s === 'accepted' ? [i] : []))];
    const result = { path, token: e.target[0]?.id ?? -1, kind: 'bonus' as const, status: e.tree.status };
    t.round(
      e.tree.parents,
      result,
      e.accepted.length + e.target.length,
      { draft: e.timings.draftMs, verify: e.timings.verifyMs, total: e.timings.totalMs },
      e.tree.aux?.tokens.length ?? 0,
      bytes,
      armOf(e.note),
    );
  }
  const last = events[events.length - 1];
  return { ...t.summary(last?.counts.draftCalls ?? 0), targetCalls: last?.counts.targetCalls ?? 0 };
}

/** Acceptance at each depth pooled over several generations: accepted / offered of their summed counts (0 where none). */
export function pooledAcceptance(stats: readonly Pick<GenerationStats, 'acceptanceCounts'>[]): number[] {
  const offered: number[] = [];
  const accepted: number[] = [];
  for (const { acceptanceCounts: c } of stats) {
    c.offered.forEach((o, d) => {
      offered[d] = (offered[d] ?? 0) + o;
      accepted[d] = (accepted[d] ?? 0) + (c.accepted[d] ?? 0);
    });
  }
  return offered.map((o, d) => (o > 0 ? (accepted[d] ?? 0) / o : 0));
}
