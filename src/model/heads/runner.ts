/**
 * Draft heads as onnxruntime-web sessions next to the target: Medusa's K heads (a stateless call from a hidden
 * state to K logits rows) and the EAGLE-3 head (one decoder layer with its own KV cache, compacted like the
 * target's). The heads read the target's token embeddings, gathered here in JS from the target's checkpoint (no
 * second copy of the embedding table).
 */
import type * as OrtModule from 'onnxruntime-web';
import type { HeadsTop } from '../../engine/lm';
import { toFloat32 } from '../convert';
import { ModelLoadError } from '../errors';
import { Feeds, int64s } from '../gpu-feeds';
import {
  type BuiltHeadsGraph,
  buildEagle3Graph,
  buildMedusaGraph,
  type Eagle3Form,
  HEAD_INPUTS,
  HEAD_OUTPUTS,
} from '../graph/heads';
import type { LoadedModel } from '../load';
import { createSession } from '../ort-exclusive';
import type { Device } from '../precision';
import type { LoadedHeads } from './load';

type Ort = Pick<typeof OrtModule, 'InferenceSession' | 'Tensor'>;
type Tensor = OrtModule.Tensor;

/** The heads' inputs, all read by GPU kernels only, written into GPU buffers on WebGPU (gpu-feeds.ts). */
const GPU_FED = [
  HEAD_INPUTS.ropePositions,
  HEAD_INPUTS.hidden,
  HEAD_INPUTS.tokenEmbeds,
  HEAD_INPUTS.features,
  HEAD_INPUTS.drafted,
  HEAD_INPUTS.real,
  HEAD_INPUTS.attentionBias,
  HEAD_INPUTS.keepIndices,
  HEAD_INPUTS.logitsRows,
];

async function session(
  ort: Ort,
  built: BuiltHeadsGraph,
  device: Device,
  spec: string,
  /** Outputs left on the GPU (a KV cache fed back as the next call's past), on WebGPU. */
  onGpu: readonly string[] = [],
) {
  try {
    return await createSession(ort, built.model, {
      executionProviders: [device],
      graphOptimizationLevel: 'all',
      logSeverityLevel: 3, // errors only (see runner.ts)
      externalData: built.externalData,
      ...(device === 'webgpu' && onGpu.length > 0
        ? { preferredOutputLocation: Object.fromEntries(onGpu.map((name) => [name, 'gpu-buffer' as const])) }
        : {}),
    });
  } catch (e) {
    throw new ModelLoadError(`heads model ${spec}: could not create a ${device} session: ${(e as Error).message}`);
  }
}

/** Rows of the target's token embedding table as fp32 [tokens, d] (gathered from the checkpoint bytes). */
export function embeddingRows(target: LoadedModel, tokens: readonly number[]): Float32Array {
  const t = target.weights.get('model.embed_tokens.weight');
  const bytes = t ? target.files.get(t.file) : undefined;
  if (!t || !bytes) throw new Error(`${target.spec}: no model.embed_tokens.weight to embed tokens for the heads`);
  const d = t.shape[1] as number;
  const width = t.byteLength / (t.shape[0] as number);
  const out = new Float32Array(tokens.length * d);
  tokens.forEach((token, i) => {
    const at = t.offset + token * width;
    out.set(toFloat32(bytes.subarray(at, at + width), t.dtype as 'F32' | 'F16' | 'BF16'), i * d);
  });
  return out;
}

export class MedusaHeadsRunner {
  calls = 0;
  private constructor(
    private readonly session: OrtModule.InferenceSession,
    readonly heads: LoadedHeads,
    readonly count: number,
    readonly vocab: number,
    readonly hidden: number,
    private readonly feeds: Feeds,
  ) {}

  static async create(
    ort: Ort,
    heads: LoadedHeads,
    device: Device,
    compute: 'fp32' | 'fp16',
  ): Promise<MedusaHeadsRunner> {
    const shape = heads.medusa;
    if (!shape) throw new ModelLoadError(`heads model ${heads.spec}: these are not Medusa heads`);
    const built = buildMedusaGraph(heads, compute, device === 'wasm');
    const s = await session(ort, built, device, heads.spec);
    const first = heads.weights.get(`0.${shape.layers}.weight`)?.shape as number[];
    const feeds = await Feeds.open(ort, device, GPU_FED);
    return new MedusaHeadsRunner(s, heads, shape.heads, first[0] as number, first[1] as number, feeds);
  }

  /** Logits of every head for each hidden row: [K, rows, V] row-major. */
  async predict(hidden: Float32Array): Promise<Float32Array> {
    const [logits] = await this.run(hidden, 1, [HEAD_OUTPUTS.logits]);
    return (await (logits as Tensor).getData()) as Float32Array;
  }

  /**
   * Each head's k most probable tokens for each hidden row, softmax and selection done in the graph: [K, rows, k]
   * row-major, most probable first (12 bytes a candidate come back instead of a vocabulary row a head).
   */
  async predictTop(hidden: Float32Array, k: number): Promise<HeadsTop> {
    if (!Number.isInteger(k) || k < 1 || k > this.vocab)
      throw new RangeError(`Medusa heads: top ${k} is not in [1, ${this.vocab}]`);
    const [probs, ids] = await this.run(hidden, k, [HEAD_OUTPUTS.topProbs, HEAD_OUTPUTS.topIds]);
    const p = (await (probs as Tensor).getData()) as Float32Array;
    const i = (await (ids as Tensor).getData()) as BigInt64Array;
    return { k, probs: p, ids: Int32Array.from(i, (x) => Number(x)) };
  }

  private async run(hidden: Float32Array, k: number, fetches: string[]): Promise<Tensor[]> {
    const rows = hidden.length / this.hidden;
    const out = await this.session.run(
      {
        [HEAD_INPUTS.hidden]: this.feeds.tensor(HEAD_INPUTS.hidden, 'float32', hidden, [rows, this.hidden]),
        // A CPU kernel reads k (TopK), so it stays a CPU tensor on WebGPU.
        [HEAD_INPUTS.topK]: this.feeds.tensor(HEAD_INPUTS.topK, 'int64', int64s([k]), [1]),
      },
      fetches,
    );
    this.calls++;
    return fetches.map((name) => out[name] as Tensor);
  }

  async release(): Promise<void> {
    this.feeds.dispose();
    await this.session.release();
  }
}

export interface Eagle3Input {
  /** The next token of each row (its embedding is gathered from the target). */
  tokens: readonly number[];
  /** Per row: the target's fused feature [3d] (a real row), or the parent's `out` [d] (a drafted row). */
  inputs: readonly ({ feature: Float32Array } | { drafted: Float32Array })[];
  positions: readonly number[];
  /** [q, length + q] additive bias. */
  bias: Float32Array;
  rows: readonly number[];
}

export class Eagle3HeadRunner {
  calls = 0;
  private cache: Tensor[] = [];
  private cacheLength = 0;
  private pendingKeep: number[] | null = null;

  private constructor(
    private readonly ort: Ort,
    private readonly session: OrtModule.InferenceSession,
    readonly heads: LoadedHeads,
    private readonly target: LoadedModel,
    readonly compute: 'fp32' | 'fp16',
    private readonly feeds: Feeds,
  ) {
    this.reset();
  }

  static async create(
    ort: Ort,
    heads: LoadedHeads,
    target: LoadedModel,
    device: Device,
    compute: 'fp32' | 'fp16',
    /** The head graph's form (graph/heads.ts; tests compare the two). */
    form: Eagle3Form = 'fused',
    /**
     * On WebGPU, keep the head's KV cache on the GPU between calls (default; as the target's). False downloads it
     * after every call and uploads it again with the next, as before: kept for measuring what that cost.
     */
    cacheOnGpu = true,
  ): Promise<Eagle3HeadRunner> {
    if (!heads.eagle3) throw new ModelLoadError(`heads model ${heads.spec}: these are not EAGLE-3 heads`);
    const built = buildEagle3Graph(heads, compute, form, device === 'wasm');
    const onGpu = cacheOnGpu ? [HEAD_OUTPUTS.presentKey, HEAD_OUTPUTS.presentValue] : [];
    const s = await session(ort, built, device, heads.spec, onGpu);
    return new Eagle3HeadRunner(ort, s, heads, target, compute, await Feeds.open(ort, device, GPU_FED));
  }

  get hiddenSize(): number {
    const e = this.heads.eagle3 as NonNullable<LoadedHeads['eagle3']>;
    return e.numHeads * e.headDim;
  }

  get draftVocab(): number {
    return (this.heads.eagle3 as NonNullable<LoadedHeads['eagle3']>).draftVocab;
  }

  /** Target token of a draft-vocabulary index. */
  targetToken(draftIndex: number): number {
    return (this.heads.eagle3 as NonNullable<LoadedHeads['eagle3']>).draftToTarget[draftIndex] as number;
  }

  /** Where the head's KV cache lives between calls ('gpu-buffer' on WebGPU unless asked otherwise). */
  get cacheLocation(): string {
    return (this.cache[0] as Tensor).location;
  }

  get length(): number {
    return this.pendingKeep ? this.pendingKeep.length : this.cacheLength;
  }

  keep(indices: ArrayLike<number>): void {
    const list = Array.from(indices);
    const pending = this.pendingKeep;
    this.pendingKeep = pending ? list.map((i) => pending[i] as number) : list;
  }

  reset(): void {
    for (const t of this.cache) if (t.location === 'gpu-buffer') t.dispose();
    const e = this.heads.eagle3 as NonNullable<LoadedHeads['eagle3']>;
    const empty = () =>
      this.compute === 'fp16'
        ? new this.ort.Tensor('float16', new Uint16Array(0), [1, e.numKvHeads, 0, e.headDim])
        : new this.ort.Tensor('float32', new Float32Array(0), [1, e.numKvHeads, 0, e.headDim]);
    this.cache = [empty(), empty()];
    this.cacheLength = 0;
    this.pendingKeep = null;
  }

  /** Run q rows; returns their logits rows [rows, draftVocab] and every row's `out` [q, d]. */
  async forward(input: Eagle3Input): Promise<{ logits: Float32Array; out: Float32Array }> {
    const q = input.tokens.length;
    const d = this.hiddenSize;
    const total = this.length + q;
    if (input.bias.length !== q * total)
      throw new RangeError(`eagle head: bias ${input.bias.length} != ${q} x ${total}`);
    const features = new Float32Array(q * 3 * d);
    const drafted = new Float32Array(q * d);
    const real = new Uint8Array(q);
    input.inputs.forEach((row, i) => {
      if ('feature' in row) {
        features.set(row.feature, i * 3 * d);
        real[i] = 1;
      } else drafted.set(row.drafted, i * d);
    });
    const keepList = this.pendingKeep ?? Array.from({ length: this.cacheLength }, (_, i) => i);
    const feed = this.feeds.tensor.bind(this.feeds);
    const out = await this.session.run({
      [HEAD_INPUTS.tokenEmbeds]: feed(HEAD_INPUTS.tokenEmbeds, 'float32', embeddingRows(this.target, input.tokens), [
        q,
        d,
      ]),
      [HEAD_INPUTS.features]: feed(HEAD_INPUTS.features, 'float32', features, [q, 3 * d]),
      [HEAD_INPUTS.drafted]: feed(HEAD_INPUTS.drafted, 'float32', drafted, [q, d]),
      [HEAD_INPUTS.real]: feed(HEAD_INPUTS.real, 'bool', real, [q, 1]),
      [HEAD_INPUTS.ropePositions]: feed(HEAD_INPUTS.ropePositions, 'float32', Float32Array.from(input.positions), [
        q,
        1,
      ]),
      [HEAD_INPUTS.attentionBias]: feed(HEAD_INPUTS.attentionBias, 'float32', input.bias, [1, 1, q, total]),
      [HEAD_INPUTS.keepIndices]: feed(HEAD_INPUTS.keepIndices, 'int64', int64s(keepList), [keepList.length]),
      [HEAD_INPUTS.logitsRows]: feed(HEAD_INPUTS.logitsRows, 'int64', int64s(input.rows), [input.rows.length]),
      [HEAD_INPUTS.pastKey]: this.cache[0] as Tensor,
      [HEAD_INPUTS.pastValue]: this.cache[1] as Tensor,
    });
    this.calls++;
    for (const t of this.cache) if (t.location === 'gpu-buffer') t.dispose();
    this.cache = [out[HEAD_OUTPUTS.presentKey] as Tensor, out[HEAD_OUTPUTS.presentValue] as Tensor];
    this.cacheLength = total;
    this.pendingKeep = null;
    const both = (await (out[HEAD_OUTPUTS.logitsAndOut] as Tensor).getData()) as Float32Array;
    const logits = input.rows.length * this.draftVocab;
    if (both.length !== logits + q * d)
      throw new Error(`eagle head: ${both.length} values back, expected ${logits} logits and ${q * d} outs`);
    return { logits: both.subarray(0, logits), out: both.subarray(logits) };
  }

  async release(): Promise<void> {
    for (const t of this.cache) if (t.location === 'gpu-buffer') t.dispose();
    this.feeds.dispose();
    await this.session.release();
  }
}
