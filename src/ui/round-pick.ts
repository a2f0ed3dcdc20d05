/** Which round the tree view opens on once a run is over. */
import type { RoundEvent } from '../engine/events';

type RoundShape = Pick<RoundEvent, 'accepted'> & { tree: Pick<RoundEvent['tree'], 'tokens'> };

/**
 * The most informative round: the one with the most accepted draft tokens; among those, the largest tree; among
 * those, the earliest. -1 when there are no rounds. (The last round is often just the root: the run stopped
 * with one token left to produce.)
 */
export function mostInformativeRound(rounds: readonly RoundShape[]): number {
  let best = -1;
  rounds.forEach((r, i) => {
    const b = rounds[best];
    if (
      !b ||
      r.accepted.length > b.accepted.length ||
      (r.accepted.length === b.accepted.length && r.tree.tokens.length > b.tree.tokens.length)
    )
      best = i;
  });
  return best;
}
