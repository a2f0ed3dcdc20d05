/** No drafting: every round verifies just the root, i.e. plain autoregressive decoding of the target. */
import { type Drafter, type DraftTree, rootOnly } from './drafter';

export class NoDrafter implements Drafter {
  readonly name = 'ar';
  readonly calls = 0;
  async propose({ committed }: { committed: readonly number[] }): Promise<DraftTree> {
    return rootOnly(committed);
  }
  accept(): void {}
  reset(): void {}
}
