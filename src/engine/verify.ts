/**
 * Verification: given the target's logits at every tree node, decide the accepted path and the one token the
 * target adds itself (the correction after a rejection, or the bonus after a fully accepted path).
 *
 * - greedy: follow the children that equal the target's argmax; emit the argmax where none does.
 * - rejection (lossless under sampling): at each node, try its children in their draw order with recursive
 *   rejection sampling (Jeon et al. 2024): accept x with probability min(1, p'(x) / q'(x)); on rejection
 *   p' <- norm(max(0, p' - q')) and x is removed from q'. With one child this is exactly Leviathan et al.'s chain
 *   rule. It is lossless when each node's children are a prefix of a draw WITHOUT replacement from q (our drafters
 *   draw them so: Gumbel-top-k; see ../../../shared/reference/lossless-trees.md). A deterministic child (an n-gram
 *   match: no distribution) is the same step with a one-hot proposal: accept x with probability p'(x), otherwise
 *   p' <- p' with x removed, renormalised; i.e. draw from the target and follow the child holding that token (what
 *   vLLM does for n-gram drafts). Sampled and deterministic children may share a node: each step is a valid
 *   speculative step for the current residual, so the output stays exactly p.
 * - typical (Medusa; LOSSY): accept tokens with p(x) > min(epsilon, delta * exp(-H(p))), keep the deepest path.
 */

import { argmax, isGreedy, type Rng, type SamplingParams, sampleFrom, toProbs } from './sampling';
import { childrenOf, pathTo } from './tree';

export type VerifyRule = 'greedy' | 'rejection' | 'typical';
export const VERIFY_RULES: readonly VerifyRule[] = ['greedy', 'rejection', 'typical'];

export type NodeStatus = 'root' | 'accepted' | 'rejected' | 'unreached';

export interface VerifyTree {
  /** Node 0 is the root: the last committed token, which the target sees in this call. */
  tokens: readonly number[];
  /** parents[0] = -1; parents[i] < i. Children are tried in index order. */
  parents: readonly number[];
  /**
   * The draft's (processed) distribution at each node, from which that node's sampled children were drawn without
   * replacement; null where the node's children are all deterministic. Needed by 'rejection'.
   */
  draftProbs?: readonly (Float32Array | null)[];
  /** deterministic[i]: node i was proposed without a distribution (its parent's draftProbs does not apply). */
  deterministic?: readonly boolean[];
}

export interface VerifyResult {
  /** Accepted nodes, root first (node 0 always). */
  path: number[];
  /** The token the target produced itself. */
  token: number;
  kind: 'correction' | 'bonus';
  status: NodeStatus[];
}

export interface TypicalParams {
  epsilon: number;
  delta: number;
}
export const TYPICAL_DEFAULTS: TypicalParams = { epsilon: 0.09, delta: 0.3 };

function finish(tree: VerifyTree, path: number[], token: number, kind: VerifyResult['kind']): VerifyResult {
  const status: NodeStatus[] = tree.tokens.map(() => 'unreached');
  status[0] = 'root';
  for (const n of path.slice(1)) status[n] = 'accepted';
  // The children tried and refused at the last accepted node.
  const last = path[path.length - 1] as number;
  if (kind === 'correction') {
    tree.parents.forEach((p, i) => {
      if (p === last) status[i] = 'rejected';
    });
  }
  return { path, token, kind, status };
}

export function verifyGreedy(tree: VerifyTree, logits: (node: number) => Float32Array): VerifyResult {
  return verifyGreedyTokens(tree, (node) => argmax(logits(node)));
}

/** Greedy verification from each node's argmax token alone (what a model's forwardArgmax returns). */
export function verifyGreedyTokens(tree: VerifyTree, best: (node: number) => number): VerifyResult {
  const children = childrenOf(tree.parents);
  const path = [0];
  for (;;) {
    const node = path[path.length - 1] as number;
    const token = best(node);
    const kids = children[node] as number[];
    const match = kids.find((c) => tree.tokens[c] === token);
    if (match === undefined) return finish(tree, path, token, kids.length > 0 ? 'correction' : 'bonus');
    path.push(match);
  }
}

function residual(p: Float32Array, q: Float32Array): Float32Array {
  const out = new Float32Array(p.length);
  let sum = 0;
  for (let i = 0; i < p.length; i++) {
    const d = (p[i] as number) - (q[i] as number);
    if (d > 0) {
      out[i] = d;
      sum += d;
    }
  }
  // Numerically p' <= q' everywhere can only happen when nothing could have been rejected; keep p' then.
  if (!(sum > 1e-12)) return p;
  for (let i = 0; i < p.length; i++) out[i] = (out[i] as number) / sum;
  return out;
}

/** p with token x removed and renormalised: norm(max(0, p - onehot(x))). */
function without(p: Float32Array, x: number): Float32Array {
  const rest = 1 - (p[x] as number);
  if (!(rest > 1e-12)) return p; // x held all the mass, so it could not have been rejected
  const out = new Float32Array(p.length);
  for (let i = 0; i < p.length; i++) out[i] = i === x ? 0 : (p[i] as number) / rest;
  return out;
}

export function verifyRejection(
  tree: VerifyTree,
  logits: (node: number) => Float32Array,
  params: SamplingParams,
  rng: Rng,
): VerifyResult {
  if (isGreedy(params)) return verifyGreedy(tree, logits);
  const children = childrenOf(tree.parents);
  const path = [0];
  for (;;) {
    const node = path[path.length - 1] as number;
    let p = toProbs(logits(node), params);
    const kids = children[node] as number[];
    if (kids.length === 0) return finish(tree, path, sampleFrom(p, rng), 'bonus');
    const q0 = tree.draftProbs?.[node] ?? null;
    let q: Float32Array | null = q0 ? Float32Array.from(q0) : null;
    let accepted: number | undefined;
    for (const child of kids) {
      const x = tree.tokens[child] as number;
      const px = p[x] as number;
      if (!q || tree.deterministic?.[child]) {
        // One-hot proposal: accept with probability p'(x); otherwise x leaves p'.
        if (rng.next() < px) {
          accepted = child;
          break;
        }
        p = without(p, x);
        continue;
      }
      const qx = q[x] as number;
      if (qx > 0 && rng.next() < Math.min(1, px / qx)) {
        accepted = child;
        break;
      }
      p = residual(p, q);
      // Remove x from q' and renormalise (children were drawn without replacement).
      const rest = 1 - qx;
      q = Float32Array.from(q);
      q[x] = 0;
      if (rest > 1e-12) for (let i = 0; i < q.length; i++) q[i] = (q[i] as number) / rest;
    }
    if (accepted === undefined) return finish(tree, path, sampleFrom(p, rng), 'correction');
    path.push(accepted);
  }
}

function entropy(p: Float32Array): number {
  let h = 0;
  for (const v of p) if (v > 0) h -= v * Math.log(v);
  return h;
}

/** Medusa's typical acceptance. LOSSY: the output distribution is not the target's. */
export function verifyTypical(
  tree: VerifyTree,
  logits: (node: number) => Float32Array,
  params: SamplingParams,
  rng: Rng,
  typical: TypicalParams = TYPICAL_DEFAULTS,
): VerifyResult {
  if (isGreedy(params)) return verifyGreedy(tree, logits);
  // A node is acceptable when its parent is, and its token is typical under the target at the parent.
  const n = tree.tokens.length;
  const probs = new Map<number, Float32Array>();
  const probsAt = (node: number) => {
    let p = probs.get(node);
    if (!p) {
      p = toProbs(logits(node), { ...params, topK: 0, topP: 1 });
      probs.set(node, p);
    }
    return p;
  };
  const ok: boolean[] = new Array(n).fill(false);
  const score: number[] = new Array(n).fill(0);
  const depth: number[] = new Array(n).fill(0);
  ok[0] = true;
  for (let i = 1; i < n; i++) {
    const parent = tree.parents[i] as number;
    if (!ok[parent]) continue;
    const p = probsAt(parent);
    const px = p[tree.tokens[i] as number] as number;
    if (px > Math.min(typical.epsilon, typical.delta * Math.exp(-entropy(p)))) {
      ok[i] = true;
      depth[i] = (depth[parent] as number) + 1;
      score[i] = (score[parent] as number) + Math.log(px);
    }
  }
  let best = 0;
  for (let i = 1; i < n; i++) {
    if (!ok[i]) continue;
    if (
      (depth[i] as number) > (depth[best] as number) ||
      (depth[i] === depth[best] && (score[i] as number) > (score[best] as number))
    ) {
      best = i;
    }
  }
  const path = pathTo(tree.parents, best);
  const hasChildren = tree.parents.some((p) => p === best);
  return finish(tree, path, sampleFrom(toProbs(logits(best), params), rng), hasChildren ? 'correction' : 'bonus');
}

export function verify(
  rule: VerifyRule,
  tree: VerifyTree,
  logits: (node: number) => Float32Array,
  params: SamplingParams,
  rng: Rng,
): VerifyResult {
  if (rule === 'greedy' || isGreedy(params)) return verifyGreedy(tree, logits);
  return rule === 'typical' ? verifyTypical(tree, logits, params, rng) : verifyRejection(tree, logits, params, rng);
}
