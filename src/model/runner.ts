/**
 * One loaded model over an onnxruntime-web session, holding its KV cache between calls. Each `forward` appends q
 * tokens (a chain or a flattened token tree) to the cache and returns logits for the requested rows only;
 * `forwardArgmax` returns only each requested row's best token (computed in the graph: q token ids leave the
 * device instead of q logits rows), `forwardTopK` each row's k largest logits and their ids; `keep` schedules cache
 * compaction (the accepted path), which the next call performs inside the graph.
 *
 * On WebGPU the cache never leaves the GPU (present.* are gpu-buffer outputs fed back as the next past.*; the
 * previous ones are disposed, so GPU memory does not grow across calls); only the logits rows or token ids come
 * back. `bytesRead` counts what came back. On wasm (plain and hybrid graphs) the cache is kept in JavaScript
 * (host-cache.ts): each call feeds the past and gets back only its own rows, and compaction happens here.
 */
import type * as OrtModule from 'onnxruntime-web';
import {
  type CausalLM,
  ContextLimitError,
  type ForwardInput,
  type LayerSkippingLM,
  type TopLogits,
} from '../engine/lm';
import { safeGet, safeSet } from '../engine/store';
import type { LlamaConfig } from './config';
import { f16ToF32 } from './convert';
import { ModelLoadError } from './errors';
import { checkExact } from './exact';
import { Feeds, int64s } from './gpu-feeds';
import {
  type BuiltGraph,
  buildLlamaGraph,
  type ComputeType,
  GRAPH_INPUTS,
  GRAPH_OUTPUTS,
  type GraphVariant,
  HIDDEN_ROWS,
  type HiddenKind,
  NEW_KV,
  pastKey,
  pastValue,
  presentKey,
  presentValue,
  ROW_INVARIANT_VARIANTS,
  runAttention,
  runMlp,
  type WeightFormat,
} from './graph/llama';
import { HostCache } from './host-cache';
import type { LoadedModel } from './load';
import { createSession } from './ort-exclusive';
import { chooseCompute, type Device, type Precision, precisionLabel, resolvePrecision } from './precision';
import type { Int4Options } from './quant';
import type { ProgressCallback } from './source';
import {
  checkVariant,
  measureVariants,
  type VariantMemory,
  type VariantTiming,
  WASM_VARIANTS,
  wasmVariant,
} from './variant';

/** What the runner needs of onnxruntime-web (its wasm or its WebGPU build). */
export type Ort = Pick<typeof OrtModule, 'InferenceSession' | 'Tensor'> & Partial<Pick<typeof OrtModule, 'env'>>;
type Tensor = OrtModule.Tensor;

export type { Device, Precision };
export { chooseCompute };

export interface RunnerOptions {
  device: Device;
  /**
   * Weights and arithmetic: 'fp32', 'fp16', 'int4', 'int8' (wasm) or 'auto' (the default; see precision.ts). 'fp16'
   * on WebGPU without shader-f16 fails with a clear error.
   */
  precision?: Precision;
  /** The older name of precision's float choices ('fp32' | 'fp16' | 'auto'); `precision` wins when both are given. */
  compute?: ComputeType | 'auto';
  /** int4 quantisation: block size (default 32) and zero points (default: symmetric, none). */
  int4?: Int4Options;
  /**
   * The MatMul attention in its row-invariant form (bit-identical logits in one-token and verify calls; 4 more ops a
   * layer). Default: on with int8 weights, off otherwise (graph/llama.ts BuildOptions.rowInvariantAttention). A graph
   * built this way is chosen among the variants that have that form (plain, hybrid).
   */
  rowInvariantAttention?: boolean;
  /**
   * Exact decoding: the row-invariant attention, and a check at load (exact.ts) that this device, precision and
   * variant really give a verified token the bits of a one-token call; with graph 'auto' the next-fastest variant
   * that can be row-invariant is tried when the first fails, and the load fails (one line, the measured difference)
   * when none passes. Greedy speculation then commits exactly plain decoding's tokens, near-ties included.
   */
  exact?: boolean;
  /**
   * 'plain' (standard ONNX ops), 'fused' (onnxruntime contrib ops), 'hybrid' (contrib ops, attention as MatMuls) or
   * 'auto': the fastest on this device, measured at load on the model's first two layers (variant.ts). Default
   * 'plain' here; SpecEngine.load defaults to 'auto'.
   */
  graph?: GraphVariant | 'auto';
  /**
   * On WebGPU, check a variant asked for by name (not 'plain') against the plain graph before building it, as graph
   * 'auto' checks every variant, and refuse it where it computes wrong results (onnxruntime's GroupQueryAttention on
   * 4- and 8-wide subgroups: variant.ts). Default true; tests of the graph itself set false. On wasm the contrib ops
   * run onnxruntime's CPU kernels, which the variant tests compare with the plain graph.
   */
  checkGraph?: boolean;
  /** Where a measured graph-variant choice is remembered across processes or visits (the engine's store). */
  variantMemory?: VariantMemory;
  /**
   * Build the target with layer switches (an If per sub-layer, in whichever graph variant), so that it can also run
   * with sub-layers skipped (self-speculation: SWIFT) over the same weights and cache.
   */
  layerSwitches?: boolean;
  /** Also return hidden states for draft heads (see HiddenKind); absent: no hidden outputs at all. */
  hidden?: HiddenKind;
  /**
   * On wasm, keep the KV cache in JavaScript (host-cache.ts) rather than passing it through every call: default true
   * where the graph's attention is MatMuls (plain, hybrid); false passes it through as on WebGPU (comparisons).
   */
  hostCache?: boolean;
  onProgress?: ProgressCallback;
}

export { ContextLimitError, type ForwardInput };

/** What a page whose Content-Security-Policy blocks WebAssembly is told (onnxruntime's own error is emscripten's). */
export const CSP_BLOCKS_WASM =
  "the page's Content-Security-Policy blocks WebAssembly, so onnxruntime cannot start: allow it with 'wasm-unsafe-eval' in script-src";

/** Whether onnxruntime's error is the browser refusing to compile wasm under the page's Content-Security-Policy. */
export function blockedByCsp(message: string): boolean {
  return /Content Security Policy/i.test(message) && /WebAssembly|wasm/i.test(message);
}

/**
 * What a page is told when onnxruntime's own files (its .mjs and .wasm) are not served where it was pointed
 * (`ort-base`, `ortBase`), or null when the error is not that. onnxruntime's error names the file it could not fetch,
 * but comes out of session creation, so it read as a fault of the model being loaded.
 */
export function ortFilesMissing(message: string, base: unknown): string | null {
  const module = /Failed to fetch dynamically imported module:?\s*(\S+)/i.exec(message)?.[1];
  // A 404's body (empty, or a server's HTML page) handed to the wasm compiler, or no body at all.
  const wasm =
    /both async and sync fetching of the wasm failed/i.test(message) ||
    /WebAssembly\.instantiate\(\): (BufferSource argument is empty|expected magic word)/i.test(message);
  if (!module && !wasm) return null;
  const where = typeof base === 'string' && base ? base : 'the folder it was pointed at';
  const what = module ? `${module} could not be fetched` : 'its .wasm file could not be fetched, or is not wasm';
  return `onnxruntime's files are not served at ${where} (${what}): serve them there, or point ort-base (the element) or ortBase (the client) at the folder that holds them`;
}

/** onnxruntime could not build a session for this graph on this device (the model files themselves were fine). */
export class SessionCreateError extends ModelLoadError {
  override name = 'SessionCreateError';
}

/**
 * What a failed InferenceSession.create (or onnxruntime's start, ort-start.ts) is reported as: the page's fault (its
 * Content-Security-Policy, onnxruntime's files not served), or `what` failed with onnxruntime's message.
 */
export function sessionError(e: unknown, ort: Pick<Ort, 'env'>, what: string): Error {
  const message = (e as Error)?.message ?? String(e);
  // The page, not the model: a Content-Security-Policy without 'wasm-unsafe-eval' stops onnxruntime's wasm.
  if (blockedByCsp(message)) return new Error(CSP_BLOCKS_WASM);
  const missing = ortFilesMissing(message, ort.env?.wasm?.wasmPaths);
  if (missing) return new Error(missing);
  return new SessionCreateError(`${what}: ${message}`);
}

/**
 * The inputs that only GPU kernels read (the embedding's, the cache's and the rows' Gathers, the bias's Cast, the
 * rotary angles' Mul), written into GPU buffers on WebGPU (gpu-feeds.ts). position_ids and top_k stay CPU tensors:
 * CPU kernels read them (Shape, TopK's k), so a GPU buffer would be downloaded again.
 */
const GPU_FED = [
  GRAPH_INPUTS.inputIds,
  GRAPH_INPUTS.ropePositions,
  GRAPH_INPUTS.attentionBias,
  GRAPH_INPUTS.keepIndices,
  GRAPH_INPUTS.logitsRows,
  HIDDEN_ROWS,
];

export class ModelRunner implements CausalLM, Omit<LayerSkippingLM, 'canSkipLayers'> {
  private cache: Tensor[] = [];
  /** The cache in JavaScript, for a graph built with hostCache (then `cache` stays empty). */
  private readonly host: HostCache | null;
  private cacheLength = 0;
  private pendingKeep: number[] | null = null;
  private released = false;
  /** Number of forward calls since creation. */
  calls = 0;
  /** Bytes of model outputs copied back to the caller so far (logits rows or token ids). */
  bytesRead = 0;
  /** The hidden states this runner's graph returns (null: none). */
  private hiddenOutput: HiddenKind | null = null;
  private hiddenRows: Float32Array = new Float32Array(0);

  private constructor(
    private readonly ort: Ort,
    private readonly session: OrtModule.InferenceSession,
    readonly model: LoadedModel,
    readonly device: Device,
    readonly graph: BuiltGraph,
    /** The load-time measurement behind graph 'auto' (empty when the variant was given). */
    readonly variantTimings: VariantTiming[],
    private readonly feeds: Feeds,
  ) {
    const c = model.config;
    this.host = graph.hostCache
      ? new HostCache(c.numLayers, c.numKvHeads, c.headDim, graph.compute === 'fp16' ? 'float16' : 'float32')
      : null;
    this.reset();
  }
  /**
   * Exact decoding (RunnerOptions.exact): built row-invariant and checked at load on this device, so a verify call
   * gives every token the logits bits a call of its own gives it.
   */
  exact = false;

  /**
   * Built with layer switches: it can also run with sub-layers skipped (forwardSkipping). The first and last layers
   * always run, so a model needs three layers or more for anything to be switchable.
   */
  get canSkipLayers(): boolean {
    return this.graph.layerSwitches && this.config.numLayers >= 3;
  }

  get numLayers(): number {
    return this.config.numLayers;
  }

  /** The kind of hidden states returned (undefined: none; see RunnerOptions.hidden). */
  get hiddenKind(): HiddenKind | undefined {
    return this.hiddenOutput ?? undefined;
  }

  /** Width of one hidden row: H, or 3H for EAGLE-3's fused layers. */
  get hiddenWidth(): number {
    return (this.hiddenOutput === 'eagle3' ? 3 : 1) * this.config.hiddenSize;
  }

  /** The hidden rows of the last call ([hiddenRows, hiddenWidth]). */
  lastHidden(): Float32Array {
    if (!this.hiddenOutput) throw new Error(`${this.model.spec}: built without hidden-state outputs`);
    return this.hiddenRows;
  }

  /** The arithmetic type. */
  get compute(): ComputeType {
    return this.graph.compute;
  }

  get weightFormat(): WeightFormat {
    return this.graph.weightFormat;
  }

  get variant(): GraphVariant {
    return this.graph.variant;
  }

  /** 'fp32', 'fp16', 'int8', 'int4' (fp32 compute) or 'int4-fp16'. */
  get precision(): string {
    return precisionLabel({ weights: this.graph.weightFormat, compute: this.graph.compute });
  }

  static async create(ort: Ort, model: LoadedModel, options: RunnerOptions): Promise<ModelRunner> {
    const requested: Precision = options.precision ?? options.compute ?? 'auto';
    const native = await chooseCompute(options.device);
    let precision: ReturnType<typeof resolvePrecision>;
    try {
      precision = resolvePrecision(requested, model.config, native, options.device);
    } catch (e) {
      throw new ModelLoadError(`${model.spec}: ${(e as Error).message}`);
    }
    if (precision.compute === 'fp16' && options.device === 'webgpu' && native !== 'fp16') {
      throw new ModelLoadError(
        `${model.spec}: fp16 compute needs the WebGPU feature shader-f16, which this adapter lacks`,
      );
    }
    const label = precisionLabel(precision);
    if (options.exact && options.rowInvariantAttention === false) {
      throw new ModelLoadError(
        `${model.spec}: exact decoding needs the row-invariant attention (rowInvariantAttention false)`,
      );
    }
    const rowInvariant = options.exact === true || (options.rowInvariantAttention ?? precision.weights === 'int8');
    const named = options.graph === undefined || options.graph === 'auto' ? null : options.graph;
    // A named graph whose attention cannot be row-invariant where it must be: exact decoding, the attention asked for,
    // or int8's default, which keeps speculation exact (a named fused graph silently went without it: 9 of 36 greedy
    // runs of chain, dynamic and lookup then differed from plain decoding).
    if (rowInvariant && named && !ROW_INVARIANT_VARIANTS.includes(named)) {
      if (options.exact)
        throw new ModelLoadError(
          `${model.spec}: exact decoding needs a graph whose attention is MatMuls (plain or hybrid); the ${named} graph's GroupQueryAttention gives a verified token other last bits than a call of its own`,
        );
      const asked = options.rowInvariantAttention === true;
      const why = asked
        ? 'the row-invariant attention asked for (rowInvariantAttention)'
        : 'int8 keeps speculation exact with a row-invariant attention, which';
      throw new ModelLoadError(
        `${model.spec}: ${why} needs a graph whose attention is MatMuls, and the ${named} graph's is GroupQueryAttention: load with graph 'auto', 'plain' or 'hybrid'${asked ? '' : ' (or rowInvariantAttention: false to accept that greedy speculation may differ from plain decoding)'}`,
      );
    }
    let variants: GraphVariant[] = [named ?? 'plain'];
    let variantTimings: VariantTiming[] = [];
    // WebGPU gathers fp16 only with shader-f16; wasm always can.
    const embeddingType = options.device === 'webgpu' && native !== 'fp16' ? 'float32' : 'float16';
    // What the probe graphs are built with: the check of a named variant, or graph 'auto''s choice.
    const probePrecision = { ...precision, rowInvariant };
    if (named && named !== 'plain' && options.device === 'webgpu' && options.checkGraph !== false) {
      options.onProgress?.({ status: 'building', name: model.spec, file: `checking the ${named} graph` });
      const wrong = await checkVariant(ort, model, options.device, probePrecision, named, embeddingType);
      if (wrong)
        throw new ModelLoadError(
          `${model.spec}: the ${named} graph computes wrong results on this WebGPU adapter (${wrong.replace(/^wrong results: /, '')}); load with graph 'auto' (it checks every variant and picks the fastest right one) or 'plain'`,
        );
    }
    if (options.graph === 'auto') {
      // On wasm the variant is known (WASM_VARIANTS); on WebGPU it is measured, once per adapter.
      const wasm = options.device === 'wasm';
      if (!wasm) options.onProgress?.({ status: 'building', name: model.spec, file: 'choosing the graph variant' });
      const choice = wasm
        ? await wasmVariant(ort, model, probePrecision, embeddingType, options.variantMemory)
        : await measureVariants(ort, model, options.device, probePrecision, embeddingType, options.variantMemory);
      variantTimings = choice.timings;
      // Exact decoding falls back to the other variants that can be row-invariant, fastest first (on wasm unmeasured:
      // in WASM_VARIANTS' order).
      const others =
        choice.timings.length > 0
          ? choice.timings
              .filter((t) => !t.error && t.variant !== choice.variant)
              .sort((a, b) => a.q1 + a.q16 - (b.q1 + b.q16))
              .map((t) => t.variant)
          : WASM_VARIANTS.filter((v) => v !== choice.variant);
      variants = options.exact ? [choice.variant, ...others] : [choice.variant];
    }
    const failures: string[] = [];
    // A variant that failed the check in an earlier load on this device is not built again while another remains:
    // building a session is the slow part of a load. The last candidate is always built and checked.
    const memory = options.exact ? options.variantMemory : undefined;
    const failedKey = (variant: GraphVariant) =>
      [
        'exact-check:v1',
        (ort as { env?: { versions?: { web?: string } } }).env?.versions?.web ?? '?',
        options.device,
        model.spec,
        model.weightBytes,
        label,
        variant,
      ].join(':');
    for (const [i, variant] of variants.entries()) {
      const failedBefore = memory && i < variants.length - 1 ? await safeGet(memory, failedKey(variant)) : undefined;
      if (typeof failedBefore === 'string') {
        failures.push(`${variant} graph (checked in an earlier load): ${failedBefore}`);
        continue;
      }
      const runner = await ModelRunner.build(
        ort,
        model,
        options,
        precision,
        variant,
        rowInvariant,
        embeddingType,
        variantTimings,
      );
      if (!options.exact) return runner;
      const check = await checkExact(runner);
      if (check.exact) {
        runner.exact = true;
        return runner;
      }
      const why = `${check.rowsDiffering} of ${check.nodes} tree nodes differ, by up to ${check.maxDiff.toPrecision(2)}`;
      failures.push(`${variant} graph: ${why}`);
      if (memory) await safeSet(memory, failedKey(variant), why);
      await runner.release();
    }
    const way = options.graph === 'auto' ? '' : 'with graph auto, ';
    throw new ModelLoadError(
      `${model.spec}: exact decoding is not available on ${options.device} in ${label}: a verify call and one-token calls give different logits here (${failures.join('; ')}); try ${way}another precision, or load without exact`,
    );
  }

  /** Build one graph variant's session. */
  private static async build(
    ort: Ort,
    model: LoadedModel,
    options: RunnerOptions,
    precision: ReturnType<typeof resolvePrecision>,
    variant: GraphVariant,
    rowInvariant: boolean,
    embeddingType: 'float16' | 'float32',
    variantTimings: VariantTiming[],
  ): Promise<ModelRunner> {
    const label = precisionLabel(precision);
    options.onProgress?.({ status: 'building', name: model.spec });
    let reported = -1;
    const onQuantize = (fraction: number) => {
      const percent = Math.floor(100 * fraction);
      if (percent === reported) return;
      reported = percent;
      options.onProgress?.({
        status: 'progress',
        name: model.spec,
        file: `${precision.weights} quantisation`,
        loaded: percent,
        total: 100,
        progress: percent,
      });
    };
    const graph = buildLlamaGraph(model.config, model.weights, model.files, {
      compute: precision.compute,
      weights: precision.weights,
      variant,
      ...(options.int4 ? { int4: options.int4 } : {}),
      rowInvariantAttention: rowInvariant,
      ...(precision.weights !== 'float' ? { onQuantize } : {}),
      embeddingType,
      ...(options.layerSwitches ? { layerSwitches: true } : {}),
      ...(options.hidden ? { hidden: options.hidden } : {}),
      ...(options.device === 'wasm' ? { foldHalfWeights: true } : {}),
      ...(options.device === 'wasm' && variant !== 'fused' && options.hostCache !== false ? { hostCache: true } : {}),
    });
    const { externalData } = graph;
    const preferredOutputLocation: Record<string, 'gpu-buffer' | 'cpu'> = {
      [GRAPH_OUTPUTS.logits]: 'cpu',
      [GRAPH_OUTPUTS.argmax]: 'cpu',
      [GRAPH_OUTPUTS.topValues]: 'cpu',
      [GRAPH_OUTPUTS.topIds]: 'cpu',
    };
    if (options.device === 'webgpu') {
      for (let i = 0; i < model.config.numLayers; i++) {
        preferredOutputLocation[presentKey(i)] = 'gpu-buffer';
        preferredOutputLocation[presentValue(i)] = 'gpu-buffer';
      }
    }
    let session: OrtModule.InferenceSession;
    try {
      session = await createSession(ort, graph.model, {
        executionProviders: [options.device],
        graphOptimizationLevel: 'all',
        // Errors only: at warning level ORT reports, for every session, that shape ops were placed on the CPU
        // (expected for these graphs), as ANSI-coloured console errors in the browser.
        logSeverityLevel: 3,
        externalData,
        preferredOutputLocation,
      });
    } catch (e) {
      throw sessionError(
        e,
        ort,
        `${model.spec}: could not create a ${options.device} session (${label}, ${variant} graph)`,
      );
    }
    options.onProgress?.({ status: 'ready', name: model.spec });
    // The session has its own copy of the weights now; keep only the graph's metadata.
    const feeds = await Feeds.open(ort, options.device, GPU_FED);
    const runner = new ModelRunner(
      ort,
      session,
      model,
      options.device,
      { ...graph, externalData: [] },
      variantTimings,
      feeds,
    );
    runner.hiddenOutput = options.hidden ?? null;
    return runner;
  }

  get config(): LlamaConfig {
    return this.model.config;
  }

  /**
   * Identifies this model as built here: its location, config, weight bytes, device (with onnxruntime's wasm threads
   * on wasm: they change the verify-cost curve's shape more than a one-token call, which is all a remembered
   * record's spot check measures), precision, graph variant and attention form (records remembered per model and
   * device, e.g. measured costs or a found skip set, are keyed by it).
   */
  get fingerprint(): string {
    const c = this.model.config;
    const text = JSON.stringify([
      this.model.spec,
      c,
      this.model.weightBytes,
      this.device,
      this.device === 'wasm'
        ? ((this.ort as { env?: { wasm?: { numThreads?: number } } }).env?.wasm?.numThreads ?? 1)
        : 0,
      this.precision,
      this.variant,
      this.canSkipLayers,
      // Only when on, so that records of the other graphs keep their keys.
      ...(this.graph.rowInvariantAttention ? ['row-invariant'] : []),
      // The cache kept in JavaScript changes what a call costs (measured curves), not what it computes.
      ...(this.graph.hostCache ? ['host-cache'] : []),
    ]);
    let h = 0x811c9dc5;
    for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
    const variant = `${this.variant}${this.canSkipLayers ? '+switches' : ''}${this.exact ? '+exact' : ''}`;
    return `${c.modelType}-${c.numLayers}x${c.hiddenSize}-${this.device}-${this.precision}-${variant}-${h.toString(16)}`;
  }

  /** Bytes of weights one call reads, as stored in the graph (for achieved-bandwidth figures). */
  get computeWeightBytes(): number {
    return this.graph.weightBytes;
  }

  /** Cache slots the next call attends to (after any pending compaction). */
  get length(): number {
    return this.pendingKeep ? this.pendingKeep.length : this.cacheLength;
  }

  /** Slots physically in the cache now (before a pending compaction). */
  get physicalLength(): number {
    return this.cacheLength;
  }

  /**
   * Keep only these cache slots (indices into the cache as `length` sees it, in order); applied inside the next
   * call (with the cache in JavaScript, at once). A second keep before that call composes with the first.
   */
  keep(indices: ArrayLike<number>): void {
    const list = Array.from(indices);
    const length = this.length;
    for (const i of list) {
      if (!Number.isInteger(i) || i < 0 || i >= length) {
        throw new RangeError(`keep: slot ${i} is outside the cache (length ${length})`);
      }
    }
    // The cache in JavaScript compacts now, between calls (a capacity it shrinks is not paid inside the next call).
    if (this.host) {
      this.host.compact(list);
      this.cacheLength = this.host.length;
      return;
    }
    const pending = this.pendingKeep;
    this.pendingKeep = pending ? list.map((i) => pending[i] as number) : list;
  }

  /** Drop the whole cache (a new prompt). */
  reset(): void {
    this.cacheLength = 0;
    this.pendingKeep = null;
    if (this.host) {
      this.host.clear();
      return;
    }
    this.disposeCache();
    const { numLayers, numKvHeads, headDim } = this.model.config;
    const empty = () =>
      this.compute === 'fp16'
        ? new this.ort.Tensor('float16', new Uint16Array(0), [1, numKvHeads, 0, headDim])
        : new this.ort.Tensor('float32', new Float32Array(0), [1, numKvHeads, 0, headDim]);
    this.cache = Array.from({ length: numLayers * 2 }, empty);
    this.cacheLength = 0;
    this.pendingKeep = null;
  }

  async forward(input: ForwardInput): Promise<Float32Array> {
    const [out] = await this.run(input, [GRAPH_OUTPUTS.logits], null);
    return this.logitsOf(out as Tensor, input);
  }

  /**
   * Like forward, with the sub-layers marked 1 in `skip` skipped ([attention of layer 0..L-1, MLP of 0..L-1]; the
   * first and last layers always run). Needs a runner built with layer switches.
   */
  async forwardSkipping(input: ForwardInput, skip: Uint8Array): Promise<Float32Array> {
    const L = this.config.numLayers;
    if (!this.canSkipLayers) throw new Error(`${this.model.spec}: built without layer switches; it cannot skip layers`);
    if (skip.length !== 2 * L) throw new RangeError(`forwardSkipping: ${skip.length} switches for ${L} layers`);
    if (skip[0] || skip[L - 1] || skip[L] || skip[2 * L - 1])
      throw new RangeError('forwardSkipping: the first and the last layer always run');
    const [out] = await this.run(input, [GRAPH_OUTPUTS.logits], skip);
    return this.logitsOf(out as Tensor, input);
  }

  private async logitsOf(out: Tensor, input: ForwardInput): Promise<Float32Array> {
    const data = (await out.getData()) as Float32Array;
    const expected = Array.from(input.rows).length * this.config.vocabSize;
    if (data.length !== expected) throw new Error(`forward: got ${data.length} logits, expected ${expected}`);
    this.bytesRead += data.byteLength;
    return data;
  }

  /** Like forward, but returns only the argmax token of each requested row (greedy verification needs no more). */
  async forwardArgmax(input: ForwardInput): Promise<Int32Array> {
    const [out] = await this.run(input, [GRAPH_OUTPUTS.argmax], null);
    const data = (await (out as Tensor).getData()) as BigInt64Array;
    this.bytesRead += data.byteLength;
    return Int32Array.from(data, (v) => Number(v));
  }

  /**
   * Like forward, but returns only each requested row's k largest logits and their ids, largest first (ties: lower
   * id first), computed in the graph: 12k bytes a row come back instead of a vocabulary row.
   */
  async forwardTopK(input: ForwardInput, k: number): Promise<TopLogits> {
    const vocab = this.config.vocabSize;
    if (!Number.isInteger(k) || k < 1 || k > vocab) throw new RangeError(`forwardTopK: k ${k} is not in [1, ${vocab}]`);
    const [v, i] = await this.run(input, [GRAPH_OUTPUTS.topValues, GRAPH_OUTPUTS.topIds], null, k);
    const values = (await (v as Tensor).getData()) as Float32Array;
    const ids = (await (i as Tensor).getData()) as BigInt64Array;
    const expected = Array.from(input.rows).length * k;
    if (values.length !== expected || ids.length !== expected)
      throw new Error(`forwardTopK: got ${values.length} values and ${ids.length} ids, expected ${expected}`);
    this.bytesRead += values.byteLength + ids.byteLength;
    return { k, values, ids: Int32Array.from(ids, (x) => Number(x)) };
  }

  private async run(
    input: ForwardInput,
    outputs: readonly string[],
    skip: Uint8Array | null,
    /** The graph's top_k (1 when top_values/top_ids are not fetched). */
    topK = 1,
  ): Promise<Tensor[]> {
    if (this.released) throw new Error(`${this.model.spec}: the model was released`);
    const q = input.tokens.length;
    const kept = this.length;
    const total = kept + q;
    if (q === 0) throw new RangeError('forward: no tokens');
    if (input.positions.length !== q)
      throw new RangeError(`forward: ${input.positions.length} positions for ${q} tokens`);
    if (input.bias.length !== q * total) {
      throw new RangeError(`forward: bias has ${input.bias.length} values, expected ${q} x ${total}`);
    }
    if (total > this.config.maxPositions) {
      throw new ContextLimitError(
        `context limit: ${total} tokens exceed ${this.model.spec}'s maximum of ${this.config.maxPositions}`,
      );
    }
    for (const r of Array.from(input.rows)) {
      if (!Number.isInteger(r) || r < 0 || r >= q) throw new RangeError(`forward: logits row ${r} is not in [0, ${q})`);
    }
    const vocab = this.config.vocabSize;
    for (const t of Array.from(input.tokens)) {
      if (!Number.isInteger(t) || t < 0 || t >= vocab)
        throw new RangeError(`forward: token id ${t} is not in [0, ${vocab})`);
    }
    const host = this.host;
    host?.ensure(Math.max(kept, 1));
    const feeds: Record<string, Tensor> = {
      [GRAPH_INPUTS.inputIds]: this.feeds.tensor(GRAPH_INPUTS.inputIds, 'int64', int64s(input.tokens), [1, q]),
      [GRAPH_INPUTS.positionIds]: this.feeds.tensor(GRAPH_INPUTS.positionIds, 'int64', int64s(input.positions), [1, q]),
      [GRAPH_INPUTS.ropePositions]: this.feeds.tensor(
        GRAPH_INPUTS.ropePositions,
        'float32',
        Float32Array.from(input.positions),
        [q, 1],
      ),
      [GRAPH_INPUTS.attentionBias]: host
        ? this.feeds.tensor(GRAPH_INPUTS.attentionBias, 'float32', host.bias(input.bias, q), [
            1,
            1,
            q,
            host.capacity + q,
          ])
        : this.feeds.tensor(GRAPH_INPUTS.attentionBias, 'float32', input.bias, [1, 1, q, total]),
      [GRAPH_INPUTS.logitsRows]: this.feeds.tensor(GRAPH_INPUTS.logitsRows, 'int64', int64s(input.rows), [
        input.rows.length,
      ]),
      [GRAPH_INPUTS.topK]: this.feeds.tensor(GRAPH_INPUTS.topK, 'int64', int64s([topK]), [1]),
    };
    if (this.canSkipLayers) {
      const L = this.config.numLayers;
      const run = (on: boolean) => new this.ort.Tensor('bool', Uint8Array.of(on ? 1 : 0), []);
      for (let i = 1; i < L - 1; i++) {
        feeds[runAttention(i)] = run(!skip?.[i]);
        feeds[runMlp(i)] = run(!skip?.[L + i]);
      }
    }
    const fetches = [...outputs];
    const hiddenName =
      this.hiddenOutput === 'eagle3' ? GRAPH_OUTPUTS.hiddenEagle3 : this.hiddenOutput ? GRAPH_OUTPUTS.hidden : null;
    if (hiddenName) {
      // None unless asked for: a call of a method that reads no hidden states (plain decoding, prompt lookup on an
      // engine loaded with heads) fetched a hidden row per logits row, 480 times the bytes of a greedy round's ids.
      const hiddenRows = int64s(input.hiddenRows ?? []);
      feeds[HIDDEN_ROWS] = this.feeds.tensor(HIDDEN_ROWS, 'int64', hiddenRows, [hiddenRows.length]);
      fetches.push(hiddenName);
    }
    const L = this.config.numLayers;
    if (!host) {
      // Compaction inside the call (the cache passes through the graph): the slots kept, all of them if none is pending.
      const keepList = this.pendingKeep ?? Array.from({ length: this.cacheLength }, (_, i) => i);
      feeds[GRAPH_INPUTS.keepIndices] = this.feeds.tensor(GRAPH_INPUTS.keepIndices, 'int64', int64s(keepList), [
        keepList.length,
      ]);
    }
    for (let i = 0; i < L; i++) {
      if (host) {
        [feeds[pastKey(i)], feeds[pastValue(i)]] = host.feeds(this.ort, i);
        continue;
      }
      feeds[pastKey(i)] = this.cache[2 * i] as Tensor;
      feeds[pastValue(i)] = this.cache[2 * i + 1] as Tensor;
      fetches.push(presentKey(i), presentValue(i));
    }
    if (host) fetches.push(NEW_KV);
    const out = await this.session.run(feeds, fetches);
    this.calls++;
    if (host) {
      host.ensure(kept + q);
      host.appendAll((out[NEW_KV] as Tensor).data as Float32Array | Uint16Array, q);
    } else {
      this.disposeCache();
      this.cache = [];
      for (let i = 0; i < L; i++) this.cache.push(out[presentKey(i)] as Tensor, out[presentValue(i)] as Tensor);
    }
    this.cacheLength = total;
    this.pendingKeep = null;
    if (hiddenName) {
      this.hiddenRows = (await (out[hiddenName] as Tensor).getData()) as Float32Array;
      this.bytesRead += this.hiddenRows.byteLength;
    }
    return outputs.map((name) => out[name] as Tensor);
  }

  /** The cache of one layer as fp32 arrays [kvHeads, length, headDim] (tests and debugging; downloads from GPU). */
  async readCache(layer: number): Promise<{ key: Float32Array; value: Float32Array; length: number }> {
    const read = async (t: Tensor) => {
      const data = await t.getData();
      if (data instanceof Float32Array) return data;
      // An fp16 cache arrives as its bit patterns where there is no Float16Array (Node 20), as a Float16Array where
      // there is (Chromium: the diagnostics' tree check in fp16 failed on it); widening is exact either way.
      if (t.type === 'float16' && data instanceof Uint16Array) return Float32Array.from(data, f16ToF32);
      if (t.type === 'float16' && ArrayBuffer.isView(data))
        return Float32Array.from(data as unknown as ArrayLike<number>);
      throw new Error(`readCache: unexpected ${t.type} cache`);
    };
    if (this.host) return { ...this.host.read(layer), length: this.cacheLength };
    return {
      key: await read(this.cache[2 * layer] as Tensor),
      value: await read(this.cache[2 * layer + 1] as Tensor),
      length: this.cacheLength,
    };
  }

  private disposeCache(): void {
    for (const t of this.cache) if (t.location === 'gpu-buffer') t.dispose();
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.disposeCache();
    this.feeds.dispose();
    await this.session.release();
  }
}
