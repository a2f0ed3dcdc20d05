/** The drafting methods by name. */
import type { CausalLM } from '../lm';
import { AdaptiveChainDrafter } from './adaptive-chain';
import { ChainDrafter } from './chain';
import type { Drafter } from './drafter';
import { DYNAMIC_DEFAULTS, DynamicTreeDrafter } from './dynamic-tree';
import { NoDrafter } from './none';
import { StaticTreeDrafter } from './static-tree';

export const METHODS = ['ar', 'chain', 'tree', 'dynamic', 'adaptive', 'adaptive-tree'] as const;
export type Method = (typeof METHODS)[number];

export const METHOD_DESCRIPTIONS: Record<Method, string> = {
  ar: 'plain autoregressive decoding of the target (the baseline)',
  chain: 'draft model, chain of 4 tokens',
  tree: 'draft model, static tree (20 nodes, depth 6)',
  dynamic: 'draft model, dynamic tree (EAGLE-2 style: depth 6, 4 x 4 expansion, 24 nodes)',
  adaptive:
    'draft model, chain with adaptive length (+2/-1 and a 0.4 confidence stop; from the measured cost curve once calibrated)',
  'adaptive-tree': 'draft model, dynamic tree whose depth and node budget follow the measured acceptance',
};

export function isMethod(name: string): name is Method {
  return (METHODS as readonly string[]).includes(name);
}

export function makeDrafter(method: Method, draft: CausalLM | null): Drafter {
  if (method === 'ar') return new NoDrafter();
  if (!draft) throw new Error(`method "${method}" needs a draft model`);
  switch (method) {
    case 'chain':
      return new ChainDrafter(draft, { gamma: 4 });
    case 'tree':
      return new StaticTreeDrafter(draft);
    case 'dynamic':
      return new DynamicTreeDrafter(draft, DYNAMIC_DEFAULTS);
    case 'adaptive':
      return new AdaptiveChainDrafter(draft);
    case 'adaptive-tree':
      return new DynamicTreeDrafter(draft, { ...DYNAMIC_DEFAULTS, adaptive: true });
  }
}

export type { Drafter, DraftRequest, DraftTree } from './drafter';
