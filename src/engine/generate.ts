/**
 * The round loop. Per round: the drafter proposes a tree under the root (the last committed token), the target
 * verifies the whole tree in ONE call, the verifier picks the accepted path plus one target token, and both caches
 * keep only the accepted path. Plain decoding is the same loop with a root-only tree.
 */
import type { TextTokenizer } from '../model/tokenizer';
import { IncrementalDecoder } from './decode';
import type { Drafter, DraftTree } from './drafters';
import type { GenerationResult, RoundEvent, StopReason, TokenPiece } from './events';
import { type CausalLM, ContextLimitError } from './lm';
import { checkSampling, Rng, type SamplingParams } from './sampling';
import { StatsTracker } from './stats';
import { chainBias, childrenOf, keepIndices, positionIds, treeAttentionBias } from './tree';
import { type VerifyResult, type VerifyRule, verify } from './verify';

export interface GenerateOptions {
  maxNewTokens: number;
  sampling: SamplingParams;
  /** 'rejection' (lossless, default) or 'typical' (Medusa, lossy); greedy sampling always verifies greedily. */
  verifyRule?: VerifyRule;
  signal?: AbortSignal;
  /** Stop at the model's end-of-sequence tokens (default true). */
  stopAtEos?: boolean;
  /** More tokens that end the text like end-of-sequence (a chat template's end of turn). */
  stopTokens?: readonly number[];
}

export interface EngineParts {
  target: CausalLM;
  drafter: Drafter;
  tokenizer: Pick<TextTokenizer, 'decode'>;
  /** Smallest context of the models involved (defaults to the target's). */
  contextLimit?: number;
}

const pieces = (ids: readonly number[], texts: readonly string[]): TokenPiece[] =>
  ids.map((id, i) => ({ id, text: texts[i] ?? '' }));

/** The draft's continuation from the divergence: the first rejected child, then first children below it. */
function rejectedBranch(tree: DraftTree, result: VerifyResult): number[] {
  const children = childrenOf(tree.parents);
  const out: number[] = [];
  let node = result.status.indexOf('rejected');
  while (node >= 0) {
    out.push(tree.tokens[node] as number);
    node = children[node]?.[0] ?? -1;
  }
  return out;
}

export async function* generate(
  parts: EngineParts,
  prompt: readonly number[],
  options: GenerateOptions,
): AsyncGenerator<RoundEvent, GenerationResult> {
  const { target, drafter } = parts;
  const { sampling, maxNewTokens } = options;
  checkSampling(sampling);
  if (!Number.isInteger(maxNewTokens) || maxNewTokens < 1)
    throw new RangeError(`max new tokens ${maxNewTokens} must be >= 1`);
  if (prompt.length === 0) throw new RangeError('the prompt is empty: nothing to continue');
  const limit = Math.min(parts.contextLimit ?? target.config.maxPositions, target.config.maxPositions);
  if (prompt.length >= limit) {
    throw new ContextLimitError(
      `context limit: the prompt has ${prompt.length} tokens; the model's context is ${limit}`,
    );
  }
  const rule = options.verifyRule ?? 'rejection';
  const eos = new Set(options.stopAtEos === false ? [] : [...target.config.eosTokenIds, ...(options.stopTokens ?? [])]);
  const vocab = target.config.vocabSize;
  const rng = new Rng(sampling.seed);
  const stats = new StatsTracker();
  const decoder = new IncrementalDecoder(parts.tokenizer);
  const committed = [...prompt];
  const generated: number[] = [];
  const draftCallsAtStart = drafter.calls;
  let stopReason: StopReason = 'max-tokens';

  target.reset();
  drafter.reset();
  if (prompt.length > 1) {
    const t = performance.now();
    const head = prompt.slice(0, -1);
    await target.forward({
      tokens: head,
      positions: head.map((_, i) => i),
      bias: chainBias(0, head.length),
      rows: [head.length - 1],
    });
    stats.prefillCalls++;
    stats.prefillMs += performance.now() - t;
  }

  for (let round = 0; ; round++) {
    if (options.signal?.aborted) {
      stopReason = 'cancelled';
      break;
    }
    if (generated.length >= maxNewTokens) break;
    if (committed.length > limit) {
      stopReason = 'context';
      break;
    }
    const started = performance.now();
    const room = limit - committed.length;
    const tree = await drafter.propose({
      committed,
      maxNodes: room,
      maxDepth: Math.min(maxNewTokens - generated.length - 1, room),
      sampling,
      rng,
      eos,
    });
    const drafted = performance.now();
    const base = committed.length - 1; // the target has everything but the root cached
    const logits = await target.forward({
      tokens: tree.tokens,
      positions: positionIds(base, tree.parents),
      bias: treeAttentionBias(base, tree.parents),
      rows: tree.tokens.map((_, i) => i),
    });
    const verified = performance.now();
    const result = verify(rule, tree, (n) => logits.subarray(n * vocab, (n + 1) * vocab), sampling, rng);

    // An accepted end-of-sequence token ends the text: nothing after it counts, not even the target's token.
    let path = result.path;
    let targetToken: number | null = result.token;
    const eosAt = path.findIndex((n, i) => i > 0 && eos.has(tree.tokens[n] as number));
    if (eosAt > 0) {
      path = path.slice(0, eosAt + 1);
      targetToken = null;
    }
    const final: VerifyResult = { ...result, path };
    target.keep(keepIndices(base, path));
    drafter.accept(tree, final);

    const acceptedIds = path.slice(1).map((n) => tree.tokens[n] as number);
    const rejectedIds = eosAt > 0 ? [] : rejectedBranch(tree, result);
    const acceptedText = decoder.push(acceptedIds);
    const rejectedText = decoder.preview(rejectedIds);
    const targetIds = targetToken === null ? [] : [targetToken];
    const targetText = decoder.push(targetIds);
    const produced = [...acceptedIds, ...targetIds];
    committed.push(...produced);
    generated.push(...produced);
    const total = performance.now() - started;
    stats.round(tree.parents, final, produced.length, { draft: drafted - started, verify: verified - drafted, total });
    yield {
      round,
      accepted: pieces(acceptedIds, acceptedText),
      rejected: pieces(rejectedIds, rejectedText),
      target: pieces(targetIds, targetText),
      targetKind: targetToken === null ? 'none' : result.kind,
      tree: {
        tokens: [...tree.tokens],
        texts: tree.tokens.map((t) => parts.tokenizer.decode([t])),
        parents: [...tree.parents],
        status: final.status,
      },
      counts: {
        targetCalls: stats.verifyCalls + stats.prefillCalls,
        draftCalls: drafter.calls - draftCallsAtStart,
        tokens: generated.length,
      },
      timings: {
        draftMs: drafted - started,
        verifyMs: verified - drafted,
        overheadMs: Math.max(0, total - (verified - started)),
        totalMs: total,
      },
    };
    if (eosAt > 0 || (targetToken !== null && eos.has(targetToken))) {
      stopReason = 'eos';
      break;
    }
  }
  return {
    tokens: generated,
    text: decoder.text,
    stopReason,
    stats: stats.summary(drafter.calls - draftCallsAtStart),
  };
}

/** Run a generation to the end, collecting its events. */
export async function generateAll(
  parts: EngineParts,
  prompt: readonly number[],
  options: GenerateOptions,
  onRound?: (e: RoundEvent) => void,
): Promise<GenerationResult> {
  const it = generate(parts, prompt, options);
  for (;;) {
    const step = await it.next();
    if (step.done) return step.value;
    onRound?.(step.value);
  }
}
