/**
 * The engine as a user holds it: a target (and optionally a draft) loaded once, then any number of generations,
 * one at a time, with any method. DOM-free: the same class runs in the Worker, the CLI and the benchmarks.
 */

import type { ComputeType, DeviceChoice, GraphVariant, HubOptions, Precision } from '../model/index';
import {
  ModelLoadError,
  type ModelRunner,
  type OpenedHeads,
  openModels,
  type ProgressCallback,
  timeHeadsCall,
  warmupHeads,
} from '../model/index';
import type { Device } from '../model/runner';
import type { ChatMessage, TextTokenizer } from '../model/tokenizer';
import { checkBoolean, shown } from '../util/options';
import { type Calibration, calibrateCosts, targetStep } from './costs';
import {
  type CostModel,
  createDrafter,
  type Drafter,
  describeNeeds,
  type HeadsResource,
  METHOD_NAMES,
  type Method,
  type MethodSpec,
  methodSpec,
  methodsAvailable,
  type Requirement,
  uses,
} from './drafters/index';
import type { GenerationResult, RoundEvent } from './events';
import { type GenerateOptions, generate, isGreedyRun } from './generate';
import { keepResult } from './keep-result';
import { type ForwardInput, hasHiddenStates, isLayerSkipping } from './lm';
import { type AcceptancePrior, identityOf, type ModelIdentity, PRIOR_KEY, readPrior, weightsOf } from './priors';
import { checkPromptShape } from './prompt';
import { type SamplingParams, withDefaults } from './sampling';
import { type KeyValueStore, MemoryStore, safeGet, safeSet } from './store';
import type { EngineTimings } from './timings';
import { chainBias } from './tree';

type Ort = Parameters<typeof openModels>[0];

export interface EngineLoadOptions {
  target: string;
  /** Draft model folder; without it only methods that need no draft model are available. */
  draft?: string;
  /**
   * Draft heads trained on this target's features (Medusa heads or an EAGLE-3 head, in their published layouts):
   * methods medusa and eagle. The target is then built to also return the hidden states the heads read.
   */
  heads?: string;
  device: Device;
  /**
   * Where the draft model runs: 'auto' (the default) times it on both devices next to a WebGPU target and keeps the
   * faster, remembered in the store (model/draft-device.ts); 'wasm' next to a WebGPU target runs it on the CPU, where
   * a small model's call costs what its weights cost to read instead of a GPU's per-dispatch cost. On another device
   * than the target's, its precision and graph are that device's defaults.
   */
  draftDevice?: Device | 'auto';
  /**
   * Where the draft heads run: 'auto' (the default) times them on both next to a WebGPU target and keeps the faster;
   * on wasm they read the target's hidden rows on the CPU, in fp32.
   */
  headsDevice?: Device | 'auto';
  /** The older name of precision's float choices ('fp32' | 'fp16' | 'auto'); `precision` wins when both are given. */
  compute?: ComputeType | 'auto';
  /** Weights and arithmetic: 'fp32', 'fp16', 'int4', 'int8' (wasm) or 'auto' (model/precision.ts). */
  precision?: Precision;
  /** Graph variant: 'plain', 'fused', 'hybrid' (onnxruntime contrib ops) or 'auto' (default: measured at load). */
  graph?: GraphVariant | 'auto';
  /**
   * Exact decoding: greedy speculation commits exactly plain decoding's tokens, bit-exact near-ties included. The
   * target is built with row-invariant attention (plain or hybrid graph) and checked at load on this device; a load
   * where no variant passes fails with the measured difference (model/exact.ts). Without it a verified token's logits
   * may differ from a one-token call's in the last bits (fp32) or by a few hundredths (fp16 on WebGPU), which flips a
   * greedy token at a near-tie. Costs a few percent a call.
   */
  exact?: boolean;
  /**
   * Build the target with layer switches so it can draft for itself with sub-layers skipped (method swift, and
   * auto's layer-skipping arm). One graph and one copy of the weights, the variant's graph with an If per sub-layer
   * (a few percent slower per call on wasm, so off unless asked for).
   */
  layerSwitches?: boolean;
  onProgress?: ProgressCallback;
  /** Base URL for relative model folders (browser). */
  base?: string;
  /**
   * Whether the engine may measure this hardware's costs by itself before the first run of a method that uses
   * them (a few dozen model calls; well under a second on wasm). 'never' on adapters where one call takes
   * seconds (software WebGPU); calibrate() can still be called explicitly.
   */
  calibration?: 'auto' | 'never';
  /**
   * Where the engine and its methods remember what they measured or learned about a model and device: the cost
   * curve, a found skip set, what each drafter learned about its guesses in greedy generations (default: for this
   * engine's life only; the CLI uses a file, the page IndexedDB).
   */
  store?: KeyValueStore;
  /** Run a few calls of the shapes generation uses right after loading, so the first generation runs warm (default true). */
  warmup?: boolean;
  /** For `hf:` ids: the hub endpoint (HF_ENDPOINT in Node), token (HF_TOKEN) and cache. */
  hub?: HubOptions;
}

export interface EngineGenerateOptions extends Omit<GenerateOptions, 'sampling'> {
  method: Method;
  /** How tokens are chosen (default greedy: GREEDY); settings left out (or undefined) take greedy's. */
  sampling?: Partial<SamplingParams>;
}

/** A conversation to continue: the model's chat template makes the prompt, and its end-of-turn tokens stop it. */
export interface ChatPrompt {
  messages: readonly ChatMessage[];
}

export class EngineBusyError extends Error {
  override name = 'EngineBusyError';
}

/** A method asked for something this engine was not loaded with (e.g. a draft model). */
export class MethodUnavailableError extends Error {
  override name = 'MethodUnavailableError';
}

/**
 * Widths and repeats of the quick calibration the engine runs by itself (well under a second on wasm). On WebGPU it
 * also measures 64, the widest tree a method drafts (EAGLE's): a GPU's curve is flat up to some width and then steps
 * (lavapipe: 1.15x at 32, 2.76x at 64), so the cost there is measured, not extrapolated from 16 and 32.
 */
const QUICK_CURVE = { qs: [1, 2, 4, 8, 16, 32], gpuQs: [1, 2, 4, 8, 16, 32, 64], reps: 3, warmRounds: 1 } as const;

/** Version of the remembered learning records (another version is ignored). */
const LEARNED_VERSION = 1;

/**
 * The warm-up's calls per model: a prompt-sized chunk (first touch of the weights), then the reads a round makes:
 * the target's verification reading every row's best token (and a heads engine's hidden states) or, sampled with a
 * top k, each row's top k (4 here: the k a sampled run asks for is its own), the draft's tree levels reading whole
 * logits rows, single tokens. A read not warmed here compiled its kernels in the first round that made it: on
 * SwiftShader, after the warm-up and the calibration (which reads logits), the first greedy verification of 17 nodes
 * took 3.96 s where the next took 2.29 (Dawn in Node), and in Chromium auto's chain measured 1.9 s on that round
 * against 1.1, looked slower than the EAGLE head, and lost its first prompt to it (bench --trace).
 */
const WARMUP_CALLS: readonly { q: number; read: 'logits' | 'ids' | 'top'; context?: number }[] = [
  { q: 32, read: 'logits' },
  { q: 1, read: 'logits', context: 32 },
  { q: 1, read: 'ids', context: 32 },
  { q: 1, read: 'logits', context: 32 },
  { q: 16, read: 'ids' },
  { q: 13, read: 'top' },
];

const CALIBRATION_TEXT =
  'It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife.';

export class SpecEngine {
  private readonly drafters = new Map<string, Drafter>();
  /** Methods whose drafter has started from what the store remembers of its learning (once per drafter). */
  private readonly relearned = new Set<string>();
  private busy = false;
  /** The generation holding the engine (its iterator) and the stop cancel() pulls, for cancel(). */
  private current: AsyncGenerator<RoundEvent, GenerationResult> | null = null;
  private stop: AbortController | null = null;
  /** A cancel() under way: a generate() started meanwhile waits for it instead of finding the engine busy. */
  private cancelling: Promise<GenerationResult | null> | null = null;
  private costs: CostModel | null = null;
  /**
   * The warm-up's fastest single-token target call reading its logits (as the calibration's calls do), in ms: the
   * first calibration checks a remembered record against it before timing calls of its own.
   */
  private warmSingleMs: number | undefined;
  /** Acceptance priors that apply to the loaded drafters (readPriors()). */
  private priors: { draft?: AcceptancePrior; heads?: AcceptancePrior } = {};
  readonly timings: EngineTimings = { loadMs: 0, warmupMs: 0, calibrationMs: 0, calibration: 'none' };

  private constructor(
    readonly target: ModelRunner,
    readonly draft: ModelRunner | null,
    readonly heads: OpenedHeads | null,
    /** Where the draft model runs and how that was decided (null: no draft model). */
    readonly draftDevice: DeviceChoice | null,
    /** Where the draft heads run and how that was decided (null: no heads). */
    readonly headsDevice: DeviceChoice | null,
    private readonly calibration: 'auto' | 'never',
    private readonly store: KeyValueStore,
  ) {}

  static async load(ort: Ort, options: EngineLoadOptions): Promise<SpecEngine> {
    const {
      target,
      draft,
      heads,
      calibration = 'auto',
      store = new MemoryStore(),
      warmup = true,
      graph = 'auto',
      ...rest
    } = options;
    if (calibration !== 'auto' && calibration !== 'never')
      throw new RangeError(`calibration "${String(calibration)}" is not one of auto, never`);
    checkBoolean('warmup', warmup);
    // The graph variant is measured on this device unless given, and remembered in the store.
    const open = { ...rest, graph, variantMemory: store };
    const started = performance.now();
    const opened = await openModels(ort, { target, ...(draft ? { draft } : {}), ...(heads ? { heads } : {}) }, open);
    const engine = new SpecEngine(
      opened.target,
      opened.draft,
      opened.heads,
      opened.draftDevice,
      opened.headsDevice,
      calibration,
      store,
    );
    engine.timings.loadMs = performance.now() - started;
    if (opened.startMs !== undefined) engine.timings.startMs = opened.startMs;
    for (const warning of engine.readPriors()) options.onProgress?.({ status: 'warning', ...warning });
    if (warmup) await engine.warmup();
    return engine;
  }

  /**
   * Run each model a few times at the widths generation uses (one token; a small tree; a prompt-sized chunk), then
   * drop the caches: a fresh session's first calls are several times slower than its steady state (memory growth,
   * first-touch of weights and kernels, shader compilation on WebGPU).
   */
  async warmup(): Promise<void> {
    const started = performance.now();
    const singles: number[] = [];
    for (const lm of [this.target, this.draft]) {
      if (!lm) continue;
      // Single tokens follow the prompt-sized chunk's tokens, as a generation's do (its first cached tokens kept).
      let cached = 0;
      for (const { q, read, context = 0 } of WARMUP_CALLS) {
        const at = context <= cached && context + q + 1 <= lm.config.maxPositions ? context : 0;
        if (at + q + 1 > lm.config.maxPositions) continue;
        if (at === 0) lm.reset();
        else lm.keep(Array.from({ length: at }, (_, i) => i));
        const tokens = Array.from({ length: q }, (_, i) => i % lm.config.vocabSize);
        const input: ForwardInput = {
          tokens,
          positions: tokens.map((_, i) => at + i),
          bias: chainBias(at, q),
          rows: [q - 1],
        };
        cached = at + q;
        if (read === 'logits') {
          const t = performance.now();
          await lm.forward(input);
          if (lm === this.target && q === 1) singles.push(performance.now() - t);
          continue;
        }
        // A round's reads: every node's row, and for heads every node's hidden state. The draft model's trees read
        // whole logits rows (DraftModelState.expand), never argmax or top k.
        const rows = tokens.map((_, i) => i);
        const wide = { ...input, rows, ...(lm === this.target && hasHiddenStates(lm) ? { hiddenRows: rows } : {}) };
        if (lm !== this.target) await lm.forward(q > 1 ? wide : input);
        else if (read === 'ids') await (lm.forwardArgmax ? lm.forwardArgmax(wide) : lm.forward(wide));
        else await (lm.forwardTopK ? lm.forwardTopK(wide, Math.min(4, lm.config.vocabSize)) : lm.forward(wide));
      }
      lm.reset();
    }
    if (this.heads) await warmupHeads(this.heads, this.target.hiddenWidth);
    if (singles.length > 0) this.warmSingleMs = Math.min(...singles);
    this.timings.warmupMs += performance.now() - started;
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

  /** What this engine was loaded with, in the registry's terms. */
  get resources(): ReadonlySet<Requirement> {
    const have = new Set<Requirement>();
    if (this.draft) have.add('draft-model');
    if (isLayerSkipping(this.target)) have.add('target-self');
    if (hasHiddenStates(this.target)) have.add('target-hidden');
    if (this.heads?.medusa) have.add('medusa-heads');
    if (this.heads?.eagle3) have.add('eagle-head');
    return have;
  }

  /** The methods this engine can run. */
  methods(): MethodSpec<Method>[] {
    return methodsAvailable(this.resources);
  }

  private spec(method: Method): MethodSpec<Method> {
    const spec = methodSpec(method);
    if (!spec)
      throw new MethodUnavailableError(`unknown method ${shown(method)} (the methods: ${METHOD_NAMES.join(', ')})`);
    const missing = spec.needs.filter((n) => !this.resources.has(n));
    if (missing.length > 0) {
      const without: Record<Requirement, string> = {
        'draft-model': 'a draft model (load one)',
        'target-self':
          this.target.config.numLayers < 3
            ? `a target of 3 layers or more (this one has ${this.target.config.numLayers}: its first and last always run)`
            : 'a target graph with layer switches',
        'target-hidden': "the target's hidden states (they come with heads)",
        'medusa-heads': this.heads
          ? `Medusa heads (${this.heads.loaded.spec} is an EAGLE-3 head)`
          : 'Medusa heads (load them)',
        'eagle-head': this.heads
          ? `an EAGLE-3 head (${this.heads.loaded.spec} holds Medusa heads)`
          : 'an EAGLE-3 head (load one)',
      };
      throw new MethodUnavailableError(
        `method "${method}" ${describeNeeds(spec)}, and this engine was loaded without ${missing.map((m) => without[m]).join(' or ')}`,
      );
    }
    return spec;
  }

  /** Where a method's learning is remembered: per method and the models its drafter was made with. */
  private learnedKey(spec: MethodSpec<Method>): string {
    const draft = uses(spec, 'draft-model') && this.draft ? this.draft.fingerprint : 'none';
    const heads =
      this.heads && (uses(spec, 'medusa-heads') || uses(spec, 'eagle-head')) ? this.heads.loaded.spec : 'none';
    return `learned:${spec.name}:${this.target.fingerprint}:${draft}:${heads}`;
  }

  private drafterFor(spec: MethodSpec<Method>): Drafter {
    let d = this.drafters.get(spec.name);
    if (!d) {
      // createDrafter reads a draft padded to another vocabulary size over the target's (vocab-bridge.ts).
      d = createDrafter(spec.name, {
        target: this.target,
        ...(uses(spec, 'draft-model') && this.draft ? { draft: this.draft } : {}),
        ...(this.heads && (uses(spec, 'medusa-heads') || uses(spec, 'eagle-head'))
          ? { heads: this.headsResource(this.heads) }
          : {}),
        costs: () => this.costs,
        store: this.store,
        priors: this.priors,
      });
      this.drafters.set(spec.name, d);
    }
    return d;
  }

  /**
   * The acceptance priors shipped in the draft model's and the heads' config.json (priors.ts) that were measured with
   * these models; one that is damaged or stale (measured with other weights of its own drafter) is returned as a
   * warning naming its model. One measured with another target is left out without a word: a valid pairing of its own.
   */
  private readPriors(): { name: string; message: string }[] {
    const warnings: { name: string; message: string }[] = [];
    let target: ModelIdentity | null = null;
    const read = (role: string, name: string, raw: unknown, model: Parameters<typeof weightsOf>[0]) => {
      // Without a prior, no weights are digested.
      if (raw === undefined || raw === null) return undefined;
      target ??= identityOf(this.target.model);
      const r = readPrior(raw, target, weightsOf(model));
      if (r && 'ignored' in r && !r.quiet)
        warnings.push({
          name,
          message: `${role} ${name}: ${r.ignored}: left out (auto measures this drafter instead)`,
        });
      return r && 'prior' in r ? r.prior : undefined;
    };
    const { draft: d, heads: h } = this;
    const draft = d && read('draft model', d.model.spec, d.model.acceptancePrior, d.model);
    const heads = h && read('heads', h.loaded.spec, h.loaded.config[PRIOR_KEY], h.loaded);
    this.priors = { ...(draft ? { draft } : {}), ...(heads ? { heads } : {}) };
    return warnings;
  }

  /**
   * The heads as a drafter sees them. Their cost per call is measured with the cost model (timeHeadsCall); until
   * then (or without calibration) it is estimated from the weights each call reads, relative to one target call: a
   * Medusa call reads K ResBlocks and K vocabulary projections, an EAGLE-3 call one decoder layer, its fc and a
   * draft-vocabulary head. The estimate is low on wasm, where a call's fixed costs weigh more than its bytes.
   */
  private headsResource(heads: OpenedHeads): HeadsResource {
    return {
      spec: heads.loaded.spec,
      ...(heads.medusa ? { medusa: heads.medusa } : {}),
      ...(heads.eagle3 ? { eagle3: heads.eagle3 } : {}),
      relativeCost: () => this.costs?.headsRelative ?? heads.loaded.weightBytes / this.target.computeWeightBytes,
    };
  }

  /** The measured costs of this hardware, once calibrate() has run. */
  get costModel(): CostModel | null {
    return this.costs;
  }

  /**
   * Measure the target's verify-cost curve and the draft's cost per call on this hardware; methods that use the
   * cost model read it from then on. A few dozen model calls.
   */
  async calibrate(qs: readonly number[] = [1, 2, 4, 8, 16, 32, 64], reps = 5): Promise<CostModel> {
    if (this.busy) throw new EngineBusyError('cannot calibrate while a generation is running');
    this.busy = true;
    try {
      return (await this.measure(qs, reps, 2, true)).costs;
    } finally {
      this.busy = false;
    }
  }

  private async measure(qs: readonly number[], reps: number, warmRounds: number, fresh: boolean): Promise<Calibration> {
    const tokens = this.encode(CALIBRATION_TEXT);
    const result = await calibrateCosts({
      target: this.target,
      draft: this.draft,
      tokens,
      qs,
      reps,
      warmRounds,
      store: this.store,
      fresh,
      ...(fresh || this.warmSingleMs === undefined ? {} : { recentSingleMs: this.warmSingleMs }),
    });
    this.warmSingleMs = undefined;
    let { costs, ms } = result;
    if (this.heads) {
      // The heads' calls are timed every time (a few milliseconds): the remembered record is the models' alone. Each
      // follows a target call, as in a round: timed in a loop of their own, an EAGLE-3 head call measured 0.46-0.65 ms
      // (0.09-0.12 of a target call) where rounds found 1.55 ms per call, and the trees were grown as if drafting
      // cost a third of that.
      const started = performance.now();
      const step = await targetStep(this.target, tokens);
      const headsMs = await timeHeadsCall(this.heads, this.target.hiddenWidth, 5, step);
      this.target.reset();
      costs = { ...costs, headsRelative: headsMs / (costs.curve.points[0]?.ms ?? headsMs) };
      ms += performance.now() - started;
    }
    this.costs = costs;
    this.timings.calibrationMs += ms;
    this.timings.calibration = result.source;
    return { ...result, costs, ms };
  }

  /** The prompt text the target's chat template makes of `messages` (ending where the assistant's reply starts). */
  formatChat(messages: readonly ChatMessage[]): string {
    try {
      return this.tokenizer.applyChatTemplate(messages);
    } catch (e) {
      // The template is the target's: say which model lacks it or broke it.
      if (e instanceof ModelLoadError) throw new ModelLoadError(`target model ${this.target.model.spec}: ${e.message}`);
      throw e;
    }
  }

  /**
   * Generate from a prompt (text, token ids, or chat messages through the chat template); yields one event per
   * round and returns the result. A chat stops at the template's end-of-turn tokens. One generation at a time: it
   * ends when its iterator is run to the end, return()ed or its signal aborts, or with cancel().
   */
  generate(
    prompt: string | readonly number[] | ChatPrompt,
    engineOptions: EngineGenerateOptions,
  ): AsyncGenerator<RoundEvent, GenerationResult> {
    // The result stays readable: a cancel() between rounds takes it, and the loop's next next() still gets it.
    const it: AsyncGenerator<RoundEvent, GenerationResult> = keepResult(this.run(prompt, engineOptions, () => it));
    return it;
  }

  /**
   * Stops the running generation, if any, and frees the engine, including one whose iterator was dropped part-way
   * (it holds the engine until its iterator is run or return()ed). A round in flight finishes first (its event still
   * goes to whoever awaits it); the generation's iterator then reports done. Resolves with the stopped generation's
   * result (stop reason `cancelled`, everything it made), or null when none was running (or it failed). A generate()
   * called before it resolves waits for it.
   */
  cancel(): Promise<GenerationResult | null> {
    const it = this.current;
    if (!it) return Promise.resolve(null);
    this.stop?.abort();
    // The generation sees the stop at its next round and returns its result: to this call when it asks first (a
    // dropped iterator, or a loop between rounds), to the loop's pending next() otherwise (then it is read here from
    // the result the loop got).
    const cancelling = it.next().then(
      (step) => (step.done ? (step.value ?? this.stopped) : null),
      () => null,
    );
    this.cancelling = cancelling.finally(() => {
      if (this.cancelling === cancelling) this.cancelling = null;
    });
    return this.cancelling;
  }

  /** The result of the generation stopped last, for a cancel() whose call came after the loop's own next(). */
  private stopped: GenerationResult | null = null;

  private async *run(
    prompt: string | readonly number[] | ChatPrompt,
    engineOptions: EngineGenerateOptions,
    self: () => AsyncGenerator<RoundEvent, GenerationResult>,
  ): AsyncGenerator<RoundEvent, GenerationResult> {
    if (this.cancelling) await this.cancelling;
    if (this.busy)
      throw new EngineBusyError(
        'a generation is already running on this engine: run its iterator to the end or return() it, abort its signal, or call cancel()',
      );
    const stop = new AbortController();
    let options: EngineGenerateOptions & GenerateOptions = {
      ...engineOptions,
      sampling: withDefaults(engineOptions.sampling),
      stop: stop.signal,
    };
    const spec = this.spec(options.method);
    checkPromptShape(prompt);
    this.busy = true;
    this.current = self();
    this.stop = stop;
    this.stopped = null;
    let drafter: Drafter | null = null;
    let saveLearned: (() => Promise<void>) | null = null;
    try {
      if (spec.usesCostModel && !this.costs && this.calibration === 'auto')
        await this.measure(
          this.device === 'webgpu' ? QUICK_CURVE.gpuQs : QUICK_CURVE.qs,
          QUICK_CURVE.reps,
          QUICK_CURVE.warmRounds,
          false,
        );
      if (typeof prompt === 'object' && prompt !== null && 'messages' in prompt) {
        // The template writes the special tokens itself (BOS included), so none are added when encoding it.
        const text = this.formatChat((prompt as ChatPrompt).messages);
        prompt = this.tokenizer.encode(text, { addSpecialTokens: false });
        if (options.stopAtEos !== false)
          options = { ...options, stopTokens: [...(options.stopTokens ?? []), ...this.tokenizer.endOfTurnTokens] };
      }
      const ids = typeof prompt === 'string' ? this.encode(prompt) : [...(prompt as readonly number[])];
      drafter = this.drafterFor(spec);
      // What the drafter learns about its guesses carries over between greedy generations (Drafter.reset), and
      // between sessions through the store: a CLI run, one generation per process, starts where the last one ended.
      const greedy = isGreedyRun(options);
      const key = this.learnedKey(spec);
      const learner = drafter;
      // Saved however the generation ends: run out, cancelled, left with `break` (its iterator returned), or failed.
      if (greedy && learner.learned)
        saveLearned = () => safeSet(this.store, key, { version: LEARNED_VERSION, state: learner.learned?.() });
      if (greedy && drafter.relearn && !this.relearned.has(spec.name)) {
        this.relearned.add(spec.name);
        const record = (await safeGet(this.store, key)) as { version?: unknown; state?: unknown } | null | undefined;
        if (record?.version === LEARNED_VERSION) drafter.relearn(record.state);
      }
      // Every model the method needs bounds the context. One it only uses when it can (auto's draft model) does not:
      // its arms stand aside once the text outgrows that model's context.
      const draftBound = spec.needs.includes('draft-model') && this.draft ? this.draft.config.maxPositions : null;
      const contextLimit = Math.min(this.target.config.maxPositions, draftBound ?? Number.POSITIVE_INFINITY);
      const result = yield* generate(
        {
          target: this.target,
          drafter,
          tokenizer: this.tokenizer,
          contextLimit,
          ...(draftBound !== null ? { contextOf: 'the draft model' } : {}),
        },
        ids,
        options,
      );
      if (stop.signal.aborted) this.stopped = result;
      return result;
    } finally {
      try {
        await saveLearned?.();
        await drafter?.finish?.();
      } finally {
        this.busy = false;
        this.current = null;
        this.stop = null;
      }
    }
  }

  async release(): Promise<void> {
    await this.target.release();
    await this.draft?.release();
    await this.heads?.release();
  }
}
