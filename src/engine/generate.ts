/**
 * The round loop. Per round: the drafter proposes a tree under the root (the last committed token), the target
 * verifies the whole tree in ONE call (with any auxiliary nodes the drafter adds), the verifier picks the accepted
 * path plus one target token, and the caches keep only the accepted path. Plain decoding is the same loop with a
 * root-only tree.
 */
import type { TextTokenizer } from '../model/tokenizer';
import { checkBoolean, shown } from '../util/options';
import { IncrementalDecoder } from './decode';
import type { Drafter, DraftTree } from './drafters';
import { GenerationError, type GenerationResult, type RoundEvent, type StopReason, type TokenPiece } from './events';
import { type CausalLM, ContextLimitError, type HiddenStatesLM, hasHiddenStates } from './lm';
import { nextMacrotask } from './macrotask';
import { checkSampling, isGreedy, Rng, type SamplingParams } from './sampling';
import { armOf, StatsTracker } from './stats';
import { chainBias, checkParents, childrenOf, keepIndices, positionIds, roundBias } from './tree';
import { VERIFY_RULES, type VerifyResult, type VerifyRule, verify, verifyGreedyTokens } from './verify';
import { callTarget, forwardDiscarding, targetRead } from './verify-call';

export interface GenerateOptions {
  maxNewTokens: number;
  sampling: SamplingParams;
  /** 'rejection' (lossless, default) or 'typical' (Medusa, lossy); greedy sampling always verifies greedily. */
  verifyRule?: VerifyRule;
  signal?: AbortSignal;
  /** A second stop, read like `signal` (the engine's own, which cancel() pulls). */
  stop?: AbortSignal;
  /** Stop at the model's end-of-sequence tokens, and a chat at its end of turn (default true); stopTokens stop anyway. */
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
  /** The model whose context that is, where it is not the target's (named in the prompt-too-long error). */
  contextOf?: string;
}

const pieces = (ids: readonly number[], texts: readonly string[]): TokenPiece[] =>
  ids.map((id, i) => ({ id, text: texts[i] ?? '' }));

/**
 * Tokens with each one's own text, decoded when `texts` is first read (then kept): the tree view reads them, the CLI
 * and most library callers never do, and a round of a wide tree (EAGLE's up to 64 nodes) decoded every node each
 * round. The getter is enumerable, so posting the event to the page (structured clone) and JSON both include them;
 * add other fields with Object.assign onto this object (a spread would read the getter at once).
 */
function withTexts(tokens: number[], text: (t: number) => string): { tokens: number[]; texts: string[] } {
  let texts: string[] | null = null;
  return {
    tokens,
    get texts() {
      texts ??= tokens.map(text);
      return texts;
    },
  };
}

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

/** Whether a generation's text cannot depend on its drafter's choices: greedy decoding, or the greedy rule. */
export function isGreedyRun(options: Pick<GenerateOptions, 'sampling' | 'verifyRule'>): boolean {
  return options.verifyRule === 'greedy' || isGreedy(options.sampling);
}

/** A drafter's proposal must be a tree under the committed root that fits the room it was given. */
function checkProposal(drafter: Drafter, tree: DraftTree, root: number, room: number): void {
  const fail = (why: string) => {
    throw new Error(`drafter ${drafter.name}: ${why}`);
  };
  if (tree.tokens[0] !== root || tree.parents[0] !== -1) fail('node 0 must be the root (the last committed token)');
  if (tree.parents.length !== tree.tokens.length) fail('tokens and parents differ in length');
  checkParents(tree.parents);
  if (tree.parents.some((p, i) => i > 0 && p < 0)) fail('every node but the root needs a parent');
  const aux = tree.aux?.tokens.length ?? 0;
  if (tree.tokens.length - 1 + aux > room) fail(`${tree.tokens.length - 1 + aux} nodes exceed the room of ${room}`);
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
    throw new RangeError(
      `max new tokens must be a whole number >= 1; got ${typeof maxNewTokens === 'string' ? JSON.stringify(maxNewTokens) : String(maxNewTokens)}`,
    );
  if (options.verifyRule !== undefined && !VERIFY_RULES.includes(options.verifyRule))
    throw new RangeError(`verify rule "${String(options.verifyRule)}" is not one of ${VERIFY_RULES.join(', ')}`);
  checkBoolean('stopAtEos', options.stopAtEos);
  // An array, or a typed array of ids (prompts take both).
  const stopList = options.stopTokens as unknown;
  if (
    stopList !== undefined &&
    !Array.isArray(stopList) &&
    !(ArrayBuffer.isView(stopList) && !(stopList instanceof DataView))
  )
    throw new TypeError(`stop tokens must be an array of token ids; got ${shown(stopList)}`);
  if (prompt.length === 0) throw new RangeError('the prompt is empty: nothing to continue');
  // Token ids the target cannot embed are refused here, naming where they are (the model call would only say "token
  // id 5000 is not in [0, 4096)").
  const vocab = target.config.vocabSize;
  const outside = (id: number) => !Number.isInteger(id) || id < 0 || id >= vocab;
  const bad = prompt.findIndex(outside);
  if (bad >= 0)
    throw new RangeError(`prompt token ${bad} is ${prompt[bad]}, not in the target's vocabulary [0, ${vocab})`);
  const badStop = (options.stopTokens ?? []).find(outside);
  if (badStop !== undefined)
    throw new RangeError(`stop token ${badStop} is not in the target's vocabulary [0, ${vocab})`);
  const limit = Math.min(parts.contextLimit ?? target.config.maxPositions, target.config.maxPositions);
  // A prompt may fill the context: its last token is verified at the last position, and the token the target
  // produces there is output without ever being fed back.
  if (prompt.length > limit) {
    const full = target.config.maxPositions;
    const whose =
      limit === full
        ? `the target's context is ${limit}`
        : parts.contextOf
          ? `${parts.contextOf}'s context is ${limit} (the target's ${full}): shorten the prompt, or use a method that runs without it`
          : `the context limit is ${limit} (the target's ${full})`;
    throw new ContextLimitError(`context limit: the prompt has ${prompt.length} tokens; ${whose}`);
  }
  const rule = options.verifyRule ?? 'rejection';
  const greedy = isGreedyRun(options);
  // stopAtEos: false turns the model's own end of sequence off; the stop tokens given still stop (they were ignored).
  const eos = new Set([
    ...(options.stopAtEos === false ? [] : target.config.eosTokenIds),
    ...(options.stopTokens ?? []),
  ]);
  const rng = new Rng(sampling.seed);
  const stats = new StatsTracker();
  // From the prompt's last tokens: the first word's text in context (a leading space a decoder would strip alone).
  const decoder = new IncrementalDecoder(parts.tokenizer, prompt);
  const committed = [...prompt];
  const generated: number[] = [];
  const draftCallsAtStart = drafter.calls;
  // Draft calls of the rounds completed (a round that failed part-way counts in none of the stats).
  let draftCalls = 0;
  const result = (stopReason: StopReason): GenerationResult => ({
    tokens: [...generated],
    text: decoder.text,
    stopReason,
    stats: stats.summary(draftCalls),
    // A context shorter than the target's says whose it was ("stop: context" alone read as the target's).
    ...(stopReason === 'context' && limit < target.config.maxPositions
      ? { context: { limit, of: parts.contextOf ? `${parts.contextOf}'s context` : 'the context limit asked for' } }
      : {}),
  });

  // Draft heads read the target's hidden states: of the prompt at prefill, of every tree node at verification.
  let hidden: HiddenStatesLM | null = null;
  if (drafter.readsTargetHidden) {
    if (!hasHiddenStates(target))
      throw new Error(`drafter ${drafter.name} reads the target's hidden states, and the target returns none`);
    hidden = target;
  }

  const stopped = () => options.signal?.aborted === true || options.stop?.aborted === true;
  // Stopped before it began (an aborted signal): nothing is run, not even the prompt.
  if (stopped()) return result('cancelled');
  try {
    target.reset();
    // What the drafter learned about its guesses carries over between greedy generations (the text is the same either
    // way, and a 64-token generation is only 30-40 rounds to learn in), never into a sampled one.
    drafter.reset(greedy);
    if (prompt.length > 1) {
      const t = performance.now();
      const head = prompt.slice(0, -1);
      await forwardDiscarding(target, {
        tokens: head,
        positions: head.map((_, i) => i),
        bias: chainBias(0, head.length),
        rows: [head.length - 1],
        ...(hidden ? { hiddenRows: head.map((_, i) => i) } : {}),
      });
      stats.prefillCalls++;
      stats.prefillMs += performance.now() - t;
    }
    if (hidden) {
      const rows = prompt.length > 1 ? hidden.lastHidden() : new Float32Array(0);
      const w = hidden.hiddenWidth;
      drafter.prefilled?.(prompt, (j) => {
        if (!(j >= 0 && j < prompt.length - 1)) throw new RangeError(`no hidden state for prompt position ${j}`);
        return rows.subarray(j * w, (j + 1) * w);
      });
    }

    for (let round = 0; ; round++) {
      // Let timers and messages run between rounds (an abort arrives here at the latest one round late).
      if (round > 0) await nextMacrotask();
      // A generation that is complete says so, even if a stop came during its last round.
      if (generated.length >= maxNewTokens) return result('max-tokens');
      if (committed.length > limit) return result('context');
      if (stopped()) return result('cancelled');
      const started = performance.now();
      const room = limit - committed.length;
      const tree = await drafter.propose({
        committed,
        maxNodes: room,
        maxDepth: Math.min(maxNewTokens - generated.length - 1, room),
        sampling,
        rng,
        eos,
        generatedFrom: prompt.length,
      });
      checkProposal(drafter, tree, committed[committed.length - 1] as number, room);
      // A draft model reads the prompt in the first round (its catch-up): that is prefill, as the target's is, not
      // drafting (it made a long prompt's first round look like seconds of drafting, and lowered tokens per second).
      const draftPrefill = round === 0 ? (drafter.catchUpMs?.() ?? 0) : 0;
      stats.prefillMs += draftPrefill;
      const drafted = performance.now();
      const base = committed.length - 1; // the target has everything but the root cached
      const q = tree.tokens.length;
      const aux = tree.aux;
      const positions = positionIds(base, tree.parents);
      const input = {
        tokens: aux ? [...tree.tokens, ...aux.tokens] : tree.tokens,
        positions: aux ? [...positions, ...aux.positions] : positions,
        bias: roundBias(base, tree.parents, aux),
        rows: [...tree.tokens.keys(), ...(aux?.rows ?? []).map((r) => q + r)],
      };
      // Greedy rounds fetch only token ids, sampling rounds with top-k each row's top k, unless the drafter reads the
      // target's logits (verify-call.ts).
      const read = targetRead(target, greedy, sampling.topK, rule, drafter.readsTargetLogits === true);
      const call = await callTarget(target, input, q, read, `drafter ${drafter.name}`, hidden);
      const verified = performance.now();
      const { outputs } = call;
      const verdict = call.best
        ? verifyGreedyTokens(tree, call.best)
        : verify(rule, tree, outputs.logits, sampling, rng);

      // An accepted end-of-sequence token ends the text: nothing after it counts, not even the target's token.
      let path = verdict.path;
      let targetToken: number | null = verdict.token;
      const eosAt = path.findIndex((n, i) => i > 0 && eos.has(tree.tokens[n] as number));
      if (eosAt > 0) {
        path = path.slice(0, eosAt + 1);
        targetToken = null;
      }
      const final: VerifyResult = { ...verdict, path };
      target.keep(keepIndices(base, path));
      drafter.accept(tree, final, outputs);

      const acceptedIds = path.slice(1).map((n) => tree.tokens[n] as number);
      const rejectedIds = eosAt > 0 ? [] : rejectedBranch(tree, verdict);
      // The token that ends the text (end of sequence, an end of turn, a stop token) stays among the tokens but adds
      // nothing to the text: its text is a marker such as <|endoftext|>, which ended up in the CLI's output.
      const acceptedText = eosAt > 0 ? [...decoder.push(acceptedIds.slice(0, -1)), ''] : decoder.push(acceptedIds);
      const rejectedText = decoder.preview(rejectedIds);
      const targetIds = targetToken === null ? [] : [targetToken];
      const targetEnds = targetToken !== null && eos.has(targetToken);
      const targetText = targetEnds ? [''] : decoder.push(targetIds);
      const produced = [...acceptedIds, ...targetIds];
      committed.push(...produced);
      generated.push(...produced);
      const total = performance.now() - started - draftPrefill;
      const draftMs = drafted - started - draftPrefill;
      const verifyMs = verified - drafted;
      draftCalls = drafter.calls - draftCallsAtStart;
      const auxCount = aux?.tokens.length ?? 0;
      const note = drafter.note?.();
      stats.round(
        tree.parents,
        final,
        produced.length,
        { draft: draftMs, verify: verifyMs, total },
        auxCount,
        call.bytes,
        armOf(note ?? undefined),
      );
      const text = (t: number) => parts.tokenizer.decode([t]);
      yield {
        round,
        accepted: pieces(acceptedIds, acceptedText),
        rejected: pieces(rejectedIds, rejectedText),
        target: pieces(targetIds, targetText),
        targetKind: targetToken === null ? 'none' : verdict.kind,
        tree: Object.assign(withTexts([...tree.tokens], text), {
          parents: [...tree.parents],
          status: final.status,
          ...(tree.sources ? { sources: [...tree.sources] } : {}),
          ...(aux && auxCount > 0 ? { aux: withTexts([...aux.tokens], text) } : {}),
        }),
        ...(note ? { note } : {}),
        counts: {
          targetCalls: stats.verifyCalls + stats.prefillCalls,
          draftCalls,
          tokens: generated.length,
          targetBytes: stats.targetBytes,
        },
        timings: {
          draftMs,
          verifyMs,
          overheadMs: Math.max(0, total - draftMs - verifyMs),
          totalMs: total,
        },
      };
      if (eosAt > 0 || targetEnds) return result('eos');
    }
  } catch (e) {
    // Nothing generated so far is lost: the partial result travels with the error.
    const cause = e instanceof Error ? e : new Error(String(e));
    throw new GenerationError(cause, result('error'));
  }
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
