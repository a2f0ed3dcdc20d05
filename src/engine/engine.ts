/**
 * The engine as a user holds it: a target (and optionally a draft) loaded once, then any number of generations,
 * one at a time, with any method. DOM-free: the same class runs in the Worker, the CLI and the benchmarks.
 */

import type { ComputeType, HubOptions } from '../model/index';
import { type ModelRunner, openModel, openPair, type ProgressCallback } from '../model/index';
import type { Device } from '../model/runner';
import type { ChatMessage, TextTokenizer } from '../model/tokenizer';
import { type CostCurve, measureCurve } from './calibrate';
import { AdaptiveChainDrafter, type CostModel } from './drafters/adaptive-chain';
import { type Drafter, type Method, makeDrafter } from './drafters/index';
import type { GenerationResult, RoundEvent } from './events';
import { type GenerateOptions, generate } from './generate';

type Ort = Parameters<typeof openModel>[0];

export interface EngineLoadOptions {
  target: string;
  /** Draft model folder; without it only method 'ar' is available. */
  draft?: string;
  device: Device;
  compute?: ComputeType | 'auto';
  onProgress?: ProgressCallback;
  /** Base URL for relative model folders (browser). */
  base?: string;
  /** For `hf:` ids: the hub endpoint (HF_ENDPOINT in Node), token (HF_TOKEN) and cache. */
  hub?: HubOptions;
}

export interface EngineGenerateOptions extends GenerateOptions {
  method: Method;
}

/** A conversation to continue: the model's chat template makes the prompt, and its end-of-turn tokens stop it. */
export interface ChatPrompt {
  messages: readonly ChatMessage[];
}

export class EngineBusyError extends Error {
  override name = 'EngineBusyError';
}

export class SpecEngine {
  private readonly drafters = new Map<Method, Drafter>();
  private busy = false;
  private costs: (CostModel & { draftCurve: CostCurve }) | null = null;

  private constructor(
    readonly target: ModelRunner,
    readonly draft: ModelRunner | null,
  ) {}

  static async load(ort: Ort, options: EngineLoadOptions): Promise<SpecEngine> {
    const { target, draft, ...open } = options;
    if (!draft) return new SpecEngine(await openModel(ort, target, open), null);
    const pair = await openPair(ort, { target, draft }, open);
    return new SpecEngine(pair.target, pair.draft);
  }

  get tokenizer(): TextTokenizer {
    return this.target.model.tokenizer;
  }

  get device(): Device {
    return this.target.device;
  }

  encode(text: string): number[] {
    return this.tokenizer.encode(text);
  }

  private drafterFor(method: Method): Drafter {
    let d = this.drafters.get(method);
    if (!d) {
      d = makeDrafter(method, this.draft);
      if (d instanceof AdaptiveChainDrafter) d.setCostModel(this.costs);
      this.drafters.set(method, d);
    }
    return d;
  }

  /** The measured costs of this hardware, once calibrate() has run. */
  get costModel(): (CostModel & { draftCurve: CostCurve }) | null {
    return this.costs;
  }

  /**
   * Measure the target's verify-cost curve and the draft's cost per call on this hardware; the adaptive method
   * then picks its draft length from them. A few dozen model calls.
   */
  async calibrate(
    qs: readonly number[] = [1, 2, 4, 8, 16, 32, 64],
    reps = 5,
  ): Promise<CostModel & { draftCurve: CostCurve }> {
    if (this.busy) throw new EngineBusyError('cannot calibrate while a generation is running');
    this.busy = true;
    try {
      const tokens = this.encode(
        'It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife.',
      );
      const curve = await measureCurve(this.target, tokens, qs, reps);
      const draftCurve = this.draft
        ? await measureCurve(this.draft, tokens, [1, 2, 4, 8], reps)
        : { context: 0, points: [] };
      const t1 = curve.points[0]?.ms ?? 1;
      const draftRelative = (draftCurve.points[0]?.ms ?? 0) / t1;
      this.costs = { curve, draftRelative, draftCurve };
      const adaptive = this.drafters.get('adaptive');
      if (adaptive instanceof AdaptiveChainDrafter) adaptive.setCostModel(this.costs);
      return this.costs;
    } finally {
      this.busy = false;
    }
  }

  /** The prompt text the target's chat template makes of `messages` (ending where the assistant's reply starts). */
  formatChat(messages: readonly ChatMessage[]): string {
    return this.tokenizer.applyChatTemplate(messages);
  }

  /**
   * Generate from a prompt (text, token ids, or chat messages through the chat template); yields one event per
   * round and returns the result. A chat stops at the template's end-of-turn tokens.
   */
  async *generate(
    prompt: string | readonly number[] | ChatPrompt,
    options: EngineGenerateOptions,
  ): AsyncGenerator<RoundEvent, GenerationResult> {
    if (this.busy) throw new EngineBusyError('a generation is already running on this engine; cancel it or wait');
    this.busy = true;
    try {
      if (typeof prompt === 'object' && 'messages' in prompt) {
        // The template writes the special tokens itself (BOS included), so none are added when encoding it.
        const text = this.formatChat((prompt as ChatPrompt).messages);
        prompt = this.tokenizer.encode(text, { addSpecialTokens: false });
        options = { ...options, stopTokens: [...(options.stopTokens ?? []), ...this.tokenizer.endOfTurnTokens] };
      }
      const ids = typeof prompt === 'string' ? this.encode(prompt) : [...(prompt as readonly number[])];
      const drafter = this.drafterFor(options.method);
      const contextLimit = Math.min(
        this.target.config.maxPositions,
        options.method === 'ar' || !this.draft ? Number.POSITIVE_INFINITY : this.draft.config.maxPositions,
      );
      return yield* generate({ target: this.target, drafter, tokenizer: this.tokenizer, contextLimit }, ids, options);
    } finally {
      this.busy = false;
    }
  }

  async release(): Promise<void> {
    await this.target.release();
    await this.draft?.release();
  }
}
