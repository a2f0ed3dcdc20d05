/**
 * The registry of drafting methods. A method lives in its own file and describes itself (MethodSpec); adding one
 * means writing that file and adding it to this list. Everything that lists methods reads METHODS.
 */

import { onTargetVocabulary } from '../vocab-bridge';
import { adaptive } from './adaptive-chain';
import { auto } from './auto';
import { chain } from './chain';
import type { Drafter } from './drafter';
import { adaptiveTree, dynamic } from './dynamic-tree';
import { eagle } from './eagle';
import { lookahead } from './lookahead';
import { lookup } from './lookup';
import { medusa } from './medusa';
import { merged } from './merged';
import { type DrafterResources, describeNeeds, type MethodSpec, type Requirement } from './method';
import { ar } from './none';
import { tree } from './static-tree';
import { swift } from './swift';

const SPECS = [
  auto,
  ar,
  chain,
  tree,
  dynamic,
  adaptive,
  adaptiveTree,
  lookup,
  lookahead,
  merged,
  swift,
  medusa,
  eagle,
] as const;

/** A registered method's name. */
export type Method = (typeof SPECS)[number]['name'];

/** Every registered method, in menu order. */
export const METHODS: readonly MethodSpec<Method>[] = SPECS;

export const METHOD_NAMES: readonly Method[] = METHODS.map((m) => m.name);

export function isMethod(name: string): name is Method {
  return (METHOD_NAMES as readonly string[]).includes(name);
}

export function methodSpec(name: Method): MethodSpec<Method>;
export function methodSpec(name: string): MethodSpec<Method> | undefined;
export function methodSpec(name: string): MethodSpec<Method> | undefined {
  return METHODS.find((m) => m.name === name);
}

/** Methods usable with what is loaded (e.g. without a draft model: those that need none). */
export function methodsAvailable(have: ReadonlySet<Requirement>): MethodSpec<Method>[] {
  return METHODS.filter((m) => m.needs.every((n) => have.has(n)));
}

/** A fresh drafter for a method (for custom round loops and tests; SpecEngine does this itself). */
export function createDrafter(method: Method, resources: DrafterResources): Drafter {
  const spec = methodSpec(method);
  if (spec.needs.includes('draft-model') && !resources.draft)
    throw new Error(`method "${method}" ${describeNeeds(spec)}`);
  if ((spec.needs.includes('medusa-heads') || spec.needs.includes('eagle-head')) && !resources.heads)
    throw new Error(`method "${method}" ${describeNeeds(spec)}`);
  // A draft padded to another vocabulary size than the target's is read over the target's (as SpecEngine does).
  const draft = resources.draft && onTargetVocabulary(resources.draft, resources.target.config.vocabSize);
  return spec.create({ ...resources, ...(draft ? { draft } : {}) });
}

export type { Drafter, DraftRequest, DraftTree, TargetOutputs } from './drafter';
export {
  type CostModel,
  type DrafterResources,
  defaultHeads,
  describeNeeds,
  type HeadsResource,
  headsNeeded,
  type MethodSpec,
  type Requirement,
  type RoundCalls,
  roundCalls,
  uses,
} from './method';
