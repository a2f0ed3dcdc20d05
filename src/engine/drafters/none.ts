/** No drafting: every round verifies just the root, i.e. plain autoregressive decoding of the target. */
import { type Drafter, type DraftTree, rootOnly } from './drafter';
import type { MethodSpec } from './method';

export class NoDrafter implements Drafter {
  readonly name = 'ar';
  readonly calls = 0;
  async propose({ committed }: { committed: readonly number[] }): Promise<DraftTree> {
    return rootOnly(committed);
  }
  accept(): void {}
  reset(): void {}
}

export const ar = {
  name: 'ar',
  description: 'plain autoregressive decoding of the target (the baseline)',
  needs: [],
  lossless: true,
  usesCostModel: false,
  create: () => new NoDrafter(),
} as const satisfies MethodSpec<'ar'>;
