/**
 * <spec-decoder>: speculative decoding you can watch.
 *
 * Attributes (mirrored as properties): target, draft (empty: target only; methods that need a draft model are then
 * disabled), method, max-new-tokens, temperature, top-p, top-k, seed, device ("auto" default: a hardware WebGPU
 * adapter, else wasm, with a notice saying why; "webgpu" uses even a software adapter, with a warning; "wasm"),
 * precision ("auto" default, "fp32", "fp16", "int4", "int8" on wasm), exact (greedy speculation gives exactly plain
 * decoding's tokens: the target built row-invariant and checked at load), draft-device and heads-device (beside a
 * WebGPU target: "auto" default, timed on both devices, the faster kept; "wasm"; "webgpu"), verify, prompt, group-rounds, hide-rejected,
 * ort-base, threads, hub-endpoint (the hub host for hf:org/name ids; a token goes in the hubToken property), mode
 * ("text", or "chat": messages in through the target's chat template, see chat-view.ts). The prompt can also come
 * from a slotted element: <span slot="prompt">…</span>. cachedModels() and clearCache() show and empty the hub cache.
 * Elements that load the same models with the same options share one engine (worker and models; see
 * ../client/shared-engines.ts) and their runs take turns on it; own-engine (boolean) gives an element one of its own.
 *
 * @event sd-loaded - CustomEvent<LoadInfo>: the models are loaded (device, fallback, adapter, model shapes)
 * @event sd-round - CustomEvent<RoundEvent>: one speculative round
 * @event sd-done - CustomEvent<GenerationResult>: a generation ended (stopReason "cancelled" after cancel())
 * @event sd-error - CustomEvent<{message}>: loading or generating failed, or the request was refused
 * @event sd-progress - CustomEvent<ProgressInfo>: loading progress (transformers.js's progress_callback shape)
 * The first four also fire as `loaded`, `round`, `done` and `error`: deprecated, removed in the next release.
 *
 * @csspart prompt-input, controls, method, generate, race, cancel, status, progress, notices, fallback,
 *   device-warning, warning, error, legend, show-rejected, stream, stats, tree, note, chat
 * @cssproperty --sd-accepted, --sd-rejected, --sd-target (and their -bg variants), --sd-muted: see theme.ts
 */
import { css, html, LitElement, nothing } from 'lit';
import { property, state } from 'lit/decorators.js';
import type { ClientLoadOptions } from '../client/engine-client';
import { type EngineLease, sharedEngines } from '../client/shared-engines';
import {
  defaultHeads,
  describeNeeds,
  headsNeeded,
  isMethod,
  METHOD_NAMES,
  METHODS,
  type Method,
  type MethodSpec,
  methodSpec,
} from '../engine/drafters/index';
import type { GenerationResult, GenerationStats, RoundEvent } from '../engine/events';
import { statsFromEvents } from '../engine/stats';
import { timingsText } from '../engine/timings';
import type { Placement } from '../model/device-choice';
import { type CachedRepo, clearCachedModels, listCachedModels } from '../model/hub/cache-admin';
import { PRECISIONS } from '../model/precision';
import type { ProgressInfo } from '../model/source';
import type { ChatMessage } from '../model/tokenizer';
import { type DeviceRequest, isDeviceRequest } from '../runtime/device';
import { isThreadCount } from '../runtime/threads';
import type { LoadInfo } from '../worker/protocol';
import type { ChatView } from './chat-view';
import { fire } from './events';
import { mostInformativeRound } from './round-pick';
import type { RaceResult } from './stats-panel';
import { tokenColours } from './theme';
import './chat-view';
import './stats-panel';
import './token-stream';
import './tree-view';
import { defineOnce } from './define';

type Status = 'idle' | 'loading' | 'ready' | 'waiting' | 'generating' | 'cancelled' | 'error';

/** What an engine was loaded for: the element's loadKey, and whether its target has layer switches. */
interface LoadMeta {
  key: string;
  layerSwitches: boolean;
}

/** The bundled models, served beside the page, and the heads trained on that target. */
const DEFAULT_TARGET = 'models/austen-target/';
const BUNDLED_HEADS = { medusa: 'models/austen-medusa/', eagle3: 'models/austen-eagle3/' } as const;

/** "2 wasm threads, measured" for the runtime line. */
const threadsText = (t: NonNullable<LoadInfo['threads']>) =>
  `${t.threads} wasm thread${t.threads === 1 ? '' : 's'}, ${t.how}${t.asked !== undefined && t.asked !== t.threads ? ` (${t.asked} asked)` : ''}`;

/** How far apart the plain runs around a race's speculative run may be for it to count, and how often it is tried. */
const RACE_SPREAD = 0.15;
const RACE_TRIES = 3;

/** ", draft on wasm" for the runtime line, where a model runs on another device than the target. */
const elsewhere = (what: string, info: LoadInfo, on: LoadInfo['draftDevice']) =>
  on && on.device !== info.device ? `, ${what} on ${on.device}` : '';

const isBusy = (s: Status) => s === 'loading' || s === 'waiting' || s === 'generating';

@defineOnce('spec-decoder')
export class SpecDecoder extends LitElement {
  static override styles = [
    tokenColours,
    css`
      :host {
        display: block;
        font-family: system-ui, sans-serif;
        border: 1px solid color-mix(in srgb, var(--_sd-muted) 40%, transparent);
        border-radius: 8px;
        padding: 1rem;
      }
      textarea {
        width: 100%;
        box-sizing: border-box;
        font: inherit;
        min-height: 4rem;
      }
      .bar {
        display: flex;
        flex-wrap: wrap;
        gap: 0.5rem;
        align-items: center;
        margin: 0.5rem 0;
      }
      .legend {
        display: flex;
        flex-wrap: wrap;
        gap: 0.25rem 1rem;
        font-size: 0.85rem;
        margin: 0.5rem 0;
      }
      .legend span[data-kind='accepted'] {
        color: var(--_sd-accepted);
        text-decoration: underline solid;
      }
      .legend span[data-kind='rejected'] {
        color: var(--_sd-rejected);
        text-decoration: line-through 2px;
      }
      .legend span[data-kind='target'] {
        color: var(--_sd-target);
        outline: 1px dashed var(--_sd-target);
      }
      .legend label {
        margin-left: auto;
        color: var(--_sd-muted);
      }
      .note {
        display: block;
        color: var(--_sd-muted);
        font-size: 0.85rem;
        margin: 0.25rem 0;
      }
      .notice {
        background: #fff8c5;
        color: #4d2d00;
        border-radius: 4px;
        padding: 0.4rem 0.6rem;
      }
      .error {
        background: var(--_sd-rejected-bg);
        color: var(--_sd-rejected);
        border-radius: 4px;
        padding: 0.4rem 0.6rem;
      }
      /* Stats beside the tree, or above it where the two do not fit side by side (a phone, or 400% zoom: no
         sideways scrolling, WCAG 1.4.10). The tree scrolls inside its own box (a 16-token chain is wider than the
         page); the stats keep 20rem, so their values do not wrap a word a line. A wrapping flex row, not a container
         query: a container leaves its content out of the element's intrinsic width, and an element sized by its
         content (a flex item, an inline-block) shrank to its controls' width. */
      .panels {
        display: flex;
        flex-wrap: wrap;
        gap: 1rem;
        margin-top: 0.75rem;
      }
      .panels > * {
        min-width: 0;
      }
      .panels > [part='stats'] {
        flex: 0 1 20rem;
      }
      .panels > [part='tree'] {
        flex: 1 1 20rem;
      }
      progress {
        width: 12rem;
      }
      .lossy {
        color: var(--_sd-rejected);
        font-weight: 600;
      }
    `,
  ];

  @property() target = DEFAULT_TARGET;
  @property() draft = 'models/austen-draft/';
  /**
   * Draft heads trained on the target, for methods medusa and eagle (loaded only for them). Empty: the bundled
   * target's own heads when the target is the bundled one.
   */
  @property() heads = '';
  @property() method: Method = 'auto';
  @property({ type: Number, attribute: 'max-new-tokens' }) maxNewTokens = 64;
  @property({ type: Number }) temperature = 0;
  @property({ type: Number, attribute: 'top-p' }) topP = 1;
  @property({ type: Number, attribute: 'top-k' }) topK = 0;
  @property({ type: Number }) seed = 0;
  /** "auto": a hardware WebGPU adapter, else wasm (a software adapter is many times slower than wasm). */
  @property() device: DeviceRequest = 'auto';
  @property() precision: 'auto' | 'fp32' | 'fp16' | 'int4' | 'int8' = 'auto';
  /** Exact decoding: greedy speculation gives exactly plain decoding's tokens, bit-exact near-ties included. */
  @property({ type: Boolean }) exact = false;
  /**
   * Where the draft model runs beside a WebGPU target: "auto" (timed on both, the faster kept; a small model's call
   * costs a GPU its dispatches), "wasm" or "webgpu". An engine on wasm runs it on wasm.
   */
  @property({ attribute: 'draft-device' }) draftDevice: Placement = 'auto';
  /** Where the draft heads (medusa, eagle, auto's EAGLE head) run beside a WebGPU target, as draft-device. */
  @property({ attribute: 'heads-device' }) headsDevice: Placement = 'auto';
  @property() prompt = '';
  /** The prompt as the box last rendered it (updated()): a property set since then is newer than the box. */
  private promptShown: string | null = null;
  @property({ type: Boolean, attribute: 'group-rounds' }) groupRounds = false;
  /** Leave rejected draft tokens out of the text (they are kept, struck through, by default). */
  @property({ type: Boolean, attribute: 'hide-rejected' }) hideRejected = false;
  /** Folder with onnxruntime-web's wasm files (default: ort/ beside the page). */
  @property({ attribute: 'ort-base' }) ortBase = '';
  /**
   * onnxruntime's wasm threads on wasm: "" (onnxruntime's default), "auto" (measured once per browser and models,
   * remembered) or a number.
   */
  @property() threads = '';
  /** Verification rule under sampling: rejection (lossless) or typical (lossy). */
  @property() verify: 'rejection' | 'typical' = 'rejection';
  /** The hub host for hf: ids (default https://huggingface.co): a mirror, or the tests' local hub. */
  @property({ attribute: 'hub-endpoint' }) hubEndpoint = '';
  /** Access token for gated hub models (a property only: never put a token in an attribute). */
  @property({ attribute: false }) hubToken = '';
  /** "text": continue a prompt; "chat": a conversation through the target's chat template. */
  @property() mode: 'text' | 'chat' = 'text';
  /**
   * Load an engine of its own (its own worker and models). By default elements that load the same models with the
   * same options share one engine, and their runs take turns on it.
   */
  @property({ type: Boolean, attribute: 'own-engine' }) ownEngine = false;

  @state() private status: Status = 'idle';
  @state() private progress = new Map<string, { loaded: number; total: number }>();
  @state() private loadInfo: LoadInfo | null = null;
  @state() private events: RoundEvent[] = [];
  @state() private stats: GenerationStats | null = null;
  @state() private race: RaceResult | null = null;
  @state() private error = '';
  @state() private selectedRound = -1;
  @state() private shownPrompt = '';
  @state() private warnings: string[] = [];
  @state() private cancelledAfter = 0;
  /** The method of the unseen race run a cancel stopped ('' when the shown run was cancelled). */
  @state() private cancelledUnseen: Method | '' = '';
  /** From the call of generate(), raceAgainstPlain() or chat() to its end the element is busy (loading included). */
  @state() private running = false;
  /** Between the two runs of a race the status stays "generating". */
  private racing = false;
  /** Every drafter named in this run's trees (merged drafting), in order of appearance. */
  private sources: string[] = [];

  /** This element's hold on its engine, shared with the elements that load the same (see shared-engines.ts). */
  private client: EngineLease<LoadMeta> | null = null;
  private loadedKey = '';
  /** The load under way, and what it loads (load() shares it with a caller that wants the same). */
  private loading: { want: string; promise: Promise<LoadInfo> } | null = null;
  /** The loaded target was built with layer switches (for layer skipping). */
  private loadedLayerSwitches = false;
  private controller: AbortController | null = null;
  /** The shown run's rounds are streaming in (the text's live region is busy meanwhile). */
  @state() private streaming = false;
  /** The call of generate(), raceAgainstPlain() or chat() in progress (a removal waits for it to stop). */
  private active: Promise<unknown> | null = null;

  /** What the models are loaded for, less what a method adds to them (heads, layer switches): see reusable. */
  private get loadKey(): string {
    return JSON.stringify([
      this.target,
      this.draft,
      this.device,
      this.precision,
      this.exact,
      this.draftDevice,
      this.headsDevice,
      this.ortBase,
      this.threads,
      this.hubEndpoint,
      this.hubToken,
      this.ownEngine,
    ]);
  }

  /**
   * Whether the loaded engine serves the current method: the same models and options, and what the method adds is
   * there (its heads, its layer switches). An engine loaded with more serves a method that needs less (plain decoding
   * on the engine of an EAGLE run, as a race does), so switching between such methods reloads nothing; auto's
   * WebGPU-only heads count as there where the engine is not on WebGPU (the worker loads them only there).
   */
  private reusable(
    info: LoadInfo,
    loaded: LoadMeta = { key: this.loadedKey, layerSwitches: this.loadedLayerSwitches },
  ): boolean {
    if (loaded.key !== this.loadKey) return false;
    if (this.headsInUse && info.heads !== this.headsInUse) return false;
    if (this.gpuHeadsInUse && info.device === 'webgpu' && info.heads !== this.gpuHeadsInUse) return false;
    return !this.needsLayerSwitches || loaded.layerSwitches;
  }

  /** The heads the current method runs on ('' when it needs none, or none is known for this target). */
  private get headsInUse(): string {
    return isMethod(this.method) ? this.headsFor(methodSpec(this.method)) : '';
  }

  private headsFor(spec: MethodSpec): string {
    const kind = headsNeeded(spec);
    // A method that uses heads when loaded (auto) takes the ones named.
    if (!kind) return defaultHeads(spec, 'webgpu') ? this.heads : '';
    if (this.heads) return this.heads;
    return this.bundledTarget ? BUNDLED_HEADS[kind] : '';
  }

  /** Whether `target` names the bundled target, however written (./, no trailing slash, a full URL). */
  private get bundledTarget(): boolean {
    const url = (spec: string) => {
      try {
        return new URL(spec, document.baseURI).href.replace(/\/+$/, '');
      } catch {
        return spec;
      }
    };
    return this.target === DEFAULT_TARGET || url(this.target) === url(DEFAULT_TARGET);
  }

  /** Heads the worker loads only if the engine runs on WebGPU: the bundled target's EAGLE head for auto. */
  private get gpuHeadsInUse(): string {
    if (!isMethod(this.method) || this.headsInUse || !this.bundledTarget) return '';
    const kind = defaultHeads(methodSpec(this.method), 'webgpu');
    return kind ? BUNDLED_HEADS[kind] : '';
  }

  /** The method drafts with the target's own layers: the target is built with layer switches for it. */
  private get needsLayerSwitches(): boolean {
    return isMethod(this.method) && methodSpec(this.method).needs.includes('target-self');
  }

  private slottedPrompt(): string {
    return this.querySelector('[slot="prompt"]')?.textContent?.trim() ?? '';
  }

  /** Each attribute's property and that property's initial value: a removed attribute restores it. */
  private readonly attributeDefaults = new Map<string, [PropertyKey, unknown]>();

  constructor() {
    super();
    // The class fields hold their initial values here. Lit sets a property to null when its attribute is removed,
    // which no option takes ("temperature null must be >= 0"); frameworks remove attributes routinely.
    for (const [key, options] of (this.constructor as typeof SpecDecoder).elementProperties) {
      if (options.state || options.attribute === false) continue;
      const name = typeof options.attribute === 'string' ? options.attribute : String(key).toLowerCase();
      this.attributeDefaults.set(name, [key, (this as unknown as Record<PropertyKey, unknown>)[key]]);
    }
  }

  override attributeChangedCallback(name: string, old: string | null, value: string | null): void {
    super.attributeChangedCallback(name, old, value);
    const restore = value === null ? this.attributeDefaults.get(name) : undefined;
    if (restore) (this as unknown as Record<PropertyKey, unknown>)[restore[0]] = restore[1];
  }

  override connectedCallback(): void {
    super.connectedCallback();
    if (!this.prompt) this.prompt = this.slottedPrompt();
  }

  override disconnectedCallback(): void {
    super.disconnectedCallback();
    // A move (taken out and put back in the same task: re-parenting, a framework's reordering) keeps the run and the
    // models. A removal stops the run, which ends as cancelled with what it made (sd-done), and then lets go of the
    // engine: its worker and models go with the last element that shares them.
    setTimeout(() => {
      if (this.isConnected) return;
      this.controller?.abort();
      const client = this.client;
      this.client = null;
      this.loadedKey = '';
      this.loading = null;
      void (this.active ?? Promise.resolve()).finally(() => client?.release());
    }, 0);
  }

  private onProgress = (p: ProgressInfo) => {
    fire(this, 'sd-progress', p);
    if (p.status === 'warning' && p.message) this.warnings = [...this.warnings, p.message];
    if (p.status !== 'progress' && p.status !== 'done') return;
    const key = `${p.name} ${p.file ?? ''}`;
    const next = new Map(this.progress);
    const prev = next.get(key);
    next.set(key, { loaded: p.loaded ?? prev?.total ?? 1, total: p.total ?? prev?.total ?? p.loaded ?? 1 });
    this.progress = next;
  };

  /** Load (or reuse) the models for the current attributes. */
  async load(): Promise<LoadInfo> {
    if (this.client?.info && this.reusable(this.client.info)) return this.client.info;
    // A load under way for what is wanted now is shared: a page that preloads, then a click on Generate before it
    // is done, loaded the models twice.
    const want = JSON.stringify([this.loadKey, this.needsLayerSwitches, this.headsInUse, this.gpuHeadsInUse]);
    if (this.loading?.want === want) return this.loading.promise;
    // Other models or options: another engine (a fresh worker, or one another element loaded for the same). Releasing
    // the last onnxruntime session on WebGPU destroys its device, so an engine reloaded in the same worker would start
    // on a lost device. Letting go of this one terminates its worker unless another element still holds it.
    if (this.client) {
      this.client.release();
      this.client = null;
    }
    const promise = this.loadNow(want);
    this.loading = { want, promise };
    try {
      return await promise;
    } finally {
      if (this.loading?.promise === promise) this.loading = null;
    }
  }

  private async loadNow(want: string): Promise<LoadInfo> {
    const meta: LoadMeta = { key: this.loadKey, layerSwitches: this.needsLayerSwitches };
    const client = sharedEngines.acquire(want, meta, {
      isolated: this.ownEngine,
      serves: (loaded, info) => this.reusable(info, loaded),
    });
    this.client = client;
    this.status = 'loading';
    this.progress = new Map();
    this.loadInfo = null;
    this.warnings = [];
    const options: ClientLoadOptions = {
      target: this.target,
      draft: this.draft,
      device: this.device,
      precision: this.precision,
      ...(this.exact ? { exact: true } : {}),
      ...(this.draftDevice !== 'auto' ? { draftDevice: this.draftDevice } : {}),
      ...(this.headsDevice !== 'auto' ? { headsDevice: this.headsDevice } : {}),
      ...(this.needsLayerSwitches ? { layerSwitches: true } : {}),
      ...(this.headsInUse ? { heads: this.headsInUse } : {}),
      ...(this.gpuHeadsInUse ? { gpuHeads: this.gpuHeadsInUse } : {}),
      onProgress: this.onProgress,
      ...(this.ortBase ? { ortBase: new URL(this.ortBase, document.baseURI).href } : {}),
      ...(this.threads === 'auto'
        ? { threads: 'auto' as const }
        : this.threads
          ? { threads: Number(this.threads) }
          : {}),
      ...(this.hubEndpoint || this.hubToken
        ? {
            hub: {
              ...(this.hubEndpoint ? { endpoint: this.hubEndpoint } : {}),
              ...(this.hubToken ? { token: this.hubToken } : {}),
            },
          }
        : {}),
    };
    let info: LoadInfo;
    try {
      info = await client.load(options);
    } catch (e) {
      // This element let go of it: another load replaced this one (other models or options), or the element was
      // removed. The caller of this load is told which, not that "the engine client was terminated".
      if (this.client === client) throw e;
      throw new Error(
        this.isConnected
          ? 'load superseded: the models or options changed before it finished, and a later load replaced it'
          : 'load stopped: the element was removed before its models finished loading',
      );
    }
    if (this.client !== client) return info; // removed, or replaced by another load, meanwhile: nothing to announce
    // What the engine is built with is what was sent (or what the engine joined was built with), whatever the
    // attributes say by the time it is ready.
    this.loadedKey = client.meta.key;
    this.loadedLayerSwitches = client.meta.layerSwitches;
    this.loadInfo = info;
    this.status = 'ready';
    fire(this, 'sd-loaded', info);
    return info;
  }

  private async run(
    method: Method,
    prompt: string | { messages: ChatMessage[] },
    live: boolean,
    onRound?: (e: RoundEvent) => void,
  ): Promise<GenerationResult> {
    // Cancel works from the start, loading included: the run then stops after its first step.
    this.controller = new AbortController();
    const { signal } = this.controller;
    await this.load();
    const client = this.client;
    if (!client) {
      // Removed while loading: the run ends as cancelled, having made nothing (the worker is going).
      this.cancelledAfter = live ? 0 : -1;
      return { tokens: [], text: '', stopReason: 'cancelled', stats: statsFromEvents([]) };
    }
    this.status = 'generating';
    const stream = client.generate(prompt, {
      method,
      maxNewTokens: this.maxNewTokens,
      sampling: { temperature: this.temperature, topK: this.topK, topP: this.topP, seed: this.seed },
      verifyRule: this.verify,
      signal,
      // On a shared engine another element's run may hold it: this one waits its turn.
      onWait: (waiting) => {
        this.status = waiting ? 'waiting' : 'generating';
      },
    });
    // The shown text is busy for screen readers while it streams (not through a race's unseen runs after it).
    this.streaming = live;
    try {
      for await (const e of stream) {
        if (!live) continue;
        this.events = [...this.events, e];
        this.stats = statsFromEvents(this.events);
        for (const s of e.tree.sources?.slice(1) ?? []) if (!this.sources.includes(s)) this.sources.push(s);
        onRound?.(e);
        fire(this, 'sd-round', e);
      }
    } finally {
      this.streaming = false;
    }
    const result = await stream.result;
    this.controller = null;
    this.status = result.stopReason === 'cancelled' ? 'cancelled' : 'ready';
    // The count shown is the shown run's; a race's timing runs are not shown (-1: one of those was cancelled).
    this.cancelledAfter = live ? result.tokens.length : -1;
    this.cancelledUnseen = live ? '' : method;
    return result;
  }

  /** The first attribute whose value is not one it takes, as a one-line message (null: all fine). */
  private badOption(): string | null {
    const attrs: [string, number][] = [
      ['max-new-tokens', this.maxNewTokens],
      ['temperature', this.temperature],
      ['top-p', this.topP],
      ['top-k', this.topK],
      ['seed', this.seed],
    ];
    for (const [name, v] of attrs)
      if (Number.isNaN(v)) return `${name} must be a number; got "${this.getAttribute(name) ?? String(v)}"`;
    // The draft model's and the heads' devices are checked here too, named as attributes, before anything loads (the
    // worker refused them after the load, under their property names).
    for (const [name, v] of [
      ['device', this.device],
      ['draft-device', this.draftDevice],
      ['heads-device', this.headsDevice],
    ] as const)
      if (!isDeviceRequest(v)) return `${name} must be auto, wasm or webgpu; got "${v}"`;
    if (this.verify !== 'rejection' && this.verify !== 'typical')
      return `verify must be rejection or typical; got "${this.verify}"`;
    // Here too, before the element lets go of the engine it holds for a load the worker would refuse.
    if (!(PRECISIONS as readonly string[]).includes(this.precision))
      return `precision must be one of ${PRECISIONS.join(', ')}; got "${this.precision}"`;
    const t = this.threads;
    if (t !== '' && t !== 'auto' && !(/^[0-9]+$/.test(t) && isThreadCount(Number(t))))
      return `threads must be "auto" or a whole number from 1 to 64; got "${t}"`;
    if (this.mode !== 'text' && this.mode !== 'chat') return `mode must be text or chat; got "${this.mode}"`;
    return null;
  }

  private currentPrompt(): string {
    // The box's text (typing also sets the property), unless the property was set since the box last showed it:
    // `el.prompt = 'X'; el.generate()` in one task ran the text the box still showed (re-rendered a microtask later).
    const box = this.shadowRoot?.querySelector<HTMLTextAreaElement>('textarea#prompt');
    const text = box && this.prompt === this.promptShown ? box.value : this.prompt;
    return text.trim() ? text : '';
  }

  /**
   * A call while a run is in progress is refused (null, and an sd-error event) and leaves that run as it is: its
   * text, its status, its cancel().
   */
  private refusedWhileRunning(): boolean {
    if (!this.running) return false;
    fire(this, 'sd-error', { message: 'a run is in progress: cancel() it first, or wait for sd-done' });
    return true;
  }

  /** Records a call of generate(), raceAgainstPlain() or chat() as the one in progress until it settles. */
  private track<T>(work: Promise<T>): Promise<T> {
    const active = work.finally(() => {
      if (this.active === active) this.active = null;
    });
    this.active = active;
    return active;
  }

  /** Generate from the prompt with the current method; resolves with the result (also fired as `done`). */
  generate(): Promise<GenerationResult | null> {
    if (this.refusedWhileRunning()) return Promise.resolve(null);
    return this.track(this.generateNow());
  }

  private async generateNow(): Promise<GenerationResult | null> {
    const prompt = this.currentPrompt();
    if (!prompt) {
      this.fail('type a prompt first');
      return null;
    }
    if (!isMethod(this.method)) {
      this.fail(`unknown method "${this.method}" (use one of ${METHOD_NAMES.join(', ')})`);
      return null;
    }
    if (methodSpec(this.method).needs.includes('draft-model') && !this.draft) {
      this.fail(
        `method "${this.method}" needs a draft model: set the draft attribute, or pick a method that needs none`,
      );
      return null;
    }
    if (headsNeeded(methodSpec(this.method)) && !this.headsInUse) {
      this.fail(
        `method "${this.method}" ${describeNeeds(methodSpec(this.method))}: set the heads attribute to heads trained on ${this.target}`,
      );
      return null;
    }
    const bad = this.badOption();
    if (bad) {
      this.fail(bad);
      return null;
    }
    // A run refused before its first round (by the worker: a prompt over the context, a value out of range) leaves the
    // last run's text, stats and tree in view, as the element's own refusals do.
    const shown = {
      events: this.events,
      stats: this.stats,
      race: this.race,
      selectedRound: this.selectedRound,
      sources: this.sources,
      shownPrompt: this.shownPrompt,
    };
    this.error = '';
    this.events = [];
    this.stats = null;
    this.race = null;
    this.selectedRound = -1;
    this.sources = [];
    this.shownPrompt = prompt;
    this.running = true;
    try {
      const result = await this.run(this.method, prompt, true);
      this.stats = result.stats;
      fire(this, 'sd-done', result);
      return result;
    } catch (e) {
      if (this.events.length === 0) Object.assign(this, shown);
      this.fail((e as Error).message);
      return null;
    } finally {
      if (!this.racing) this.running = false;
    }
  }

  /**
   * Run plain decoding on the same prompt after the speculative run, and show both speeds: timed in runs of their
   * own after the shown one, none of them drawn, plain decoding before and after the speculative run (the faster
   * counts).
   */
  raceAgainstPlain(): Promise<RaceResult | null> {
    if (this.refusedWhileRunning()) return Promise.resolve(null);
    return this.track(this.raceNow());
  }

  private async raceNow(): Promise<RaceResult | null> {
    this.racing = true;
    this.running = true;
    try {
      const spec = await this.generateNow();
      if (!spec || spec.stopReason === 'cancelled') return null;
      // The speeds compared come from runs made the same way: after the shown run (which met the cold code and the
      // first shapes), and unseen (the shown run draws its text and tree every round, on the same cores as the
      // worker). Racing the shown run against an unseen plain one, plain decoding against itself read 0.42-0.77x.
      // Plain decoding runs before and after the timed speculative run, and the faster of the two counts. Right after
      // a load the browser is still compiling onnxruntime's wasm in the background, and whichever run meets that is
      // slow: plain decoding against itself read 0.59x and 1.70x in a first race, 0.97-1.13x in the next ones; auto
      // read 3.2-3.7x where later races read 1.5-2.0x. So while the two plain runs around it differ by more than
      // RACE_SPREAD, the speculative run and a plain one run again (at most RACE_TRIES times).
      const speed = (r: GenerationResult) => r.stats.tokensPerSecond;
      let before = await this.run('ar', this.shownPrompt, false);
      if (before.stopReason === 'cancelled') return null;
      let timed: GenerationResult | null = null;
      let after = before;
      for (let i = 0; i < RACE_TRIES; i++) {
        if (i > 0) before = after;
        timed = await this.run(this.method, this.shownPrompt, false);
        if (timed.stopReason === 'cancelled') return null;
        after = await this.run('ar', this.shownPrompt, false);
        if (after.stopReason === 'cancelled') return null;
        const [slow, fast] = [speed(before), speed(after)].sort((a, b) => a - b) as [number, number];
        if (slow >= fast * (1 - RACE_SPREAD)) break;
      }
      if (!timed) return null;
      const plain = Math.max(speed(before), speed(after));
      this.race = { speculative: speed(timed), plain };
      return this.race;
    } catch (e) {
      this.fail((e as Error).message);
      return null;
    } finally {
      this.racing = false;
      this.running = false;
    }
  }

  cancel(): void {
    this.controller?.abort();
  }

  /** Hub models kept in this browser's cache: repo, revisions, files and bytes. */
  cachedModels(): Promise<CachedRepo[]> {
    return listCachedModels();
  }

  /** Remove one hub model (org/name) from the cache, or all of them; resolves with what was freed. */
  clearCache(repo?: string): Promise<{ files: number; bytes: number }> {
    return clearCachedModels(repo);
  }

  /** Chat mode: generate the assistant's reply to `messages` (the chat view calls this). */
  chat(messages: ChatMessage[], view?: ChatView): Promise<GenerationResult | null> {
    if (this.refusedWhileRunning()) {
      view?.failReply();
      return Promise.resolve(null);
    }
    return this.track(this.chatNow(messages, view));
  }

  private async chatNow(messages: ChatMessage[], view?: ChatView): Promise<GenerationResult | null> {
    const bad = this.badOption();
    if (bad) {
      view?.failReply();
      this.fail(bad);
      return null;
    }
    this.error = '';
    this.events = [];
    this.stats = null;
    this.race = null;
    this.selectedRound = -1;
    this.sources = [];
    this.running = true;
    try {
      const info = await this.load();
      if (!info.target.chatTemplate) throw new Error(`${info.target.spec} has no chat template: use it in text mode`);
      if (view) view.stopTokens = info.target.endOfTurnTokens;
      const result = await this.run(this.method, { messages }, true, (e) => view?.addRound(e));
      this.stats = result.stats;
      view?.finishReply();
      fire(this, 'sd-done', result);
      return result;
    } catch (e) {
      view?.failReply();
      this.fail((e as Error).message);
      return null;
    } finally {
      this.running = false;
    }
  }

  private fail(message: string): void {
    this.error = message;
    this.status = this.client?.info ? 'ready' : 'error';
    this.controller = null;
    if (!this.client?.info) this.loadedKey = '';
    fire(this, 'sd-error', { message });
  }

  private renderProgress() {
    if (this.status !== 'loading') return nothing;
    return html`<div part="progress" role="status">
      ${[...this.progress].map(
        ([key, p]) =>
          html`<div><progress aria-label=${key} max=${p.total} value=${p.loaded}></progress> <small>${key}</small></div>`,
      )}
      <small>${this.progress.size === 0 ? 'starting…' : 'loading models and building sessions…'}</small>
    </div>`;
  }

  private get busy(): boolean {
    return isBusy(this.status) || this.running;
  }

  private button(part: 'generate' | 'race' | 'cancel'): HTMLButtonElement | null {
    return this.renderRoot.querySelector<HTMLButtonElement>(`button[part="${part}"]`);
  }

  /**
   * Keep focus where a keyboard user can act: a run disables the button that started it, so focus moves to Cancel
   * at once (in the click's own task, where layout is fresh: moving focus later forces a layout in whatever task
   * comes next) and back to that button when the run ends, unless the user has moved it elsewhere meanwhile.
   */
  private async start(part: 'generate' | 'race', work: () => Promise<unknown>): Promise<void> {
    const root = this.renderRoot as ShadowRoot;
    const hadFocus = root.activeElement === this.button(part);
    const running = work(); // sets the busy state synchronously
    if (hadFocus) {
      await this.updateComplete;
      if (this.busy) this.button('cancel')?.focus();
    }
    await running;
    if (!hadFocus) return;
    await this.updateComplete;
    const focused = root.activeElement;
    const lost = focused === null && (document.activeElement === document.body || document.activeElement === this);
    if (focused === this.button('cancel') || lost) this.button(part)?.focus();
  }

  private statusText(): string {
    if (this.status === 'cancelled')
      return this.cancelledAfter < 0
        ? `race cancelled (during its unseen ${this.cancelledUnseen === 'ar' ? 'plain decoding' : this.cancelledUnseen} run)`
        : `cancelled after ${this.cancelledAfter} tokens`;
    if (this.status === 'waiting') return "waiting for another element's run on the shared engine";
    if (this.status === 'ready' && this.racing) return 'generating';
    return this.status;
  }

  /** The round the tree shows: the one picked; while running the latest; after a run the most informative. */
  private shownRound(): number {
    if (this.selectedRound >= 0 && this.selectedRound < this.events.length) return this.selectedRound;
    return this.busy ? this.events.length - 1 : mostInformativeRound(this.events);
  }

  /**
   * The notices sit in one live region that is always there: screen readers often miss a live region that appears
   * already holding its text, and announce what is added to one they know.
   */
  private renderNotices() {
    const info = this.loadInfo;
    return html`<div part="notices" role="status">${
      info?.fallback ? html`<p class="notice" part="fallback">Running on wasm (CPU): ${info.fallback}</p>` : nothing
    }${
      info?.warning ? html`<p class="notice" part="device-warning">Slow device: ${info.warning}</p>` : nothing
    }${this.warnings.map((w) => html`<p class="notice" part="warning">${w}</p>`)}</div>${
      this.error ? html`<p class="error" part="error" role="alert">${this.error}</p>` : nothing
    }`;
  }

  private renderTreePanel(shownRound: number) {
    const round = this.events[shownRound];
    return html`<div part="tree">
      ${
        this.events.length > 0
          ? html`<label
              >Round
              <input
                type="range"
                min="0"
                max=${this.events.length - 1}
                .value=${String(shownRound)}
                aria-valuetext=${`round ${shownRound + 1} of ${this.events.length}`}
                @input=${(e: Event) => {
                  this.selectedRound = Number((e.target as HTMLInputElement).value);
                }}
              /></label
            >
            <span aria-hidden="true">${shownRound + 1} / ${this.events.length}</span>`
          : nothing
      }
      ${round?.note ? html`<small class="note" part="note">${round.note.text}</small>` : nothing}
      <sd-tree-view .tree=${round?.tree ?? null} .sources=${this.sources}></sd-tree-view>
    </div>`;
  }

  /**
   * The view (text or chat) follows `mode` between runs only: a mode changed during a run (the page's form) swapped
   * the token stream of the run in progress for the chat box, and hid its buttons.
   */
  private shownMode: 'text' | 'chat' = 'text';

  override willUpdate(): void {
    if (!this.busy) this.shownMode = this.mode === 'chat' ? 'chat' : 'text';
  }

  override updated(): void {
    this.promptShown = this.shownMode === 'text' ? this.prompt : null;
  }

  override render() {
    const busy = this.busy;
    const lossy = this.verify === 'typical' && this.temperature > 0;
    const chat = this.shownMode === 'chat';
    return html`
      <slot name="prompt" hidden></slot>
      ${
        chat
          ? html`<sd-chat
              part="chat"
              ?busy=${busy}
              ?group-rounds=${this.groupRounds}
              ?hide-rejected=${this.hideRejected}
              @sd-chat-send=${(e: CustomEvent<{ messages: ChatMessage[] }>) => void this.chat(e.detail.messages, e.target as ChatView)}
            ></sd-chat>`
          : html`<label for="prompt"><strong>Prompt</strong></label>
              <textarea
                id="prompt"
                part="prompt-input"
                .value=${this.prompt}
                @input=${(e: Event) => {
                  this.prompt = (e.target as HTMLTextAreaElement).value;
                }}
                ?disabled=${busy}
              ></textarea>`
      }
      <div class="bar" part="controls">
        <label
          >Method
          <select
            part="method"
            .value=${this.method}
            @change=${(e: Event) => {
              this.method = (e.target as HTMLSelectElement).value as Method;
            }}
            ?disabled=${busy}
          >
            ${METHODS.map(
              (m) =>
                html`<option
                  value=${m.name}
                  title=${`${m.description} (${describeNeeds(m)}${m.lossless ? '' : '; LOSSY'})`}
                  ?selected=${m.name === this.method}
                  ?disabled=${(m.needs.includes('draft-model') && !this.draft) || (headsNeeded(m) !== null && !this.headsFor(m))}
                >
                  ${m.name}
                </option>`,
            )}
          </select></label
        >
        <button
          part="generate"
          @click=${() => void this.start('generate', () => this.generate())}
          ?disabled=${busy}
          ?hidden=${chat}
        >
          Generate
        </button>
        <button
          part="race"
          @click=${() => void this.start('race', () => this.raceAgainstPlain())}
          ?disabled=${busy}
          ?hidden=${chat}
        >
          Race vs plain
        </button>
        <button part="cancel" @click=${() => this.cancel()} ?disabled=${!busy}>Cancel</button>
        <small part="status" role="status" data-status=${this.status}>${this.statusText()}</small>
        ${lossy ? html`<small class="lossy">typical acceptance: LOSSY</small>` : nothing}
      </div>
      ${this.renderProgress()} ${this.renderNotices()}
      <div class="legend" part="legend">
        <span data-kind="accepted">accepted draft</span><span data-kind="rejected">rejected draft</span
        ><span data-kind="target">target's own</span>
        ${
          this.loadInfo
            ? html`<small part="runtime"
                >on ${this.loadInfo.device} (${this.loadInfo.precision ?? this.loadInfo.compute}${
                  this.loadInfo.exact ? ', exact' : ''
                }${this.loadInfo.threads ? `, ${threadsText(this.loadInfo.threads)}` : ''}${elsewhere(
                  'draft',
                  this.loadInfo,
                  this.loadInfo.draftDevice,
                )}${elsewhere('heads', this.loadInfo, this.loadInfo.headsDevice)})${
                  this.loadInfo.timings
                    ? html`<span part="timings">; ${timingsText(this.loadInfo.timings)}</span>`
                    : nothing
                }</small
              >`
            : nothing
        }
        <label
          ><input
            type="checkbox"
            part="show-rejected"
            .checked=${!this.hideRejected}
            @change=${(e: Event) => {
              this.hideRejected = !(e.target as HTMLInputElement).checked;
            }}
          />
          show rejected drafts</label
        >
      </div>
      ${
        chat
          ? nothing
          : html`<sd-token-stream
              part="stream"
              .prompt=${this.shownPrompt}
              .rounds=${this.events}
              ?group-rounds=${this.groupRounds}
              ?hide-rejected=${this.hideRejected}
              ?busy=${this.streaming}
            ></sd-token-stream>`
      }
      <div class="panels">
        <sd-stats-panel part="stats" .stats=${this.stats} .race=${this.race}></sd-stats-panel>
        ${this.renderTreePanel(this.shownRound())}
      </div>
    `;
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'spec-decoder': SpecDecoder;
  }
}
