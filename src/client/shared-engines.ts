/**
 * Shared engines: callers that load the same models with the same options (several <spec-decoder> elements on one
 * page) share one EngineClient, hence one worker and one copy of the models (GPU memory included). Each caller holds
 * a lease; the engine's worker is terminated when the last lease is released. Generations on a shared engine take
 * turns: a generate() while another lease's run holds the engine waits for it (a cancelled wait ends as cancelled,
 * with nothing made), where the client alone refuses a second run.
 */
import type { RoundEvent } from '../engine/events';
import { checkPromptShape } from '../engine/prompt';
import type { ProgressInfo } from '../model/source';
import type { ChatMessage } from '../model/tokenizer';
import type { LoadInfo } from '../worker/protocol';
import {
  type ClientGenerateOptions,
  type ClientLoadOptions,
  cancelledBeforeStart,
  EngineClient,
  type GenerationStream,
  streamOnce,
} from './engine-client';

/** The client a shared engine needs: EngineClient's load, generate, terminate and info (a fake in the unit tests). */
export type EngineLike = Pick<EngineClient, 'load' | 'generate' | 'terminate' | 'info'>;

export interface LeaseGenerateOptions extends ClientGenerateOptions {
  /** Called with true when the run has to wait for another lease's run, and with false when its turn comes. */
  onWait?: (waiting: boolean) => void;
}

/** One holder's handle on a (possibly shared) engine. */
export interface EngineLease<M> {
  /** What the engine was acquired for (the key's own terms, e.g. whether its target has layer switches). */
  readonly meta: M;
  /** An engine of its own, shared with no one. */
  readonly isolated: boolean;
  /** What the engine's load reported, or null (not loaded yet, failed, or its worker crashed). */
  readonly info: LoadInfo | null;
  /** How many leases hold this engine now (this one included while it is held). */
  readonly holders: number;
  /**
   * The engine's load: the first call starts it, later ones (from any lease) share it or get the loaded engine's
   * info. Progress reaches every holder that asked while it loads; warnings already given are repeated to a late one.
   */
  load(options: ClientLoadOptions): Promise<LoadInfo>;
  /** A generation, started when no other lease's run holds the engine (a queue, in order of asking). */
  generate(
    prompt: string | readonly number[] | { messages: ChatMessage[] },
    options: LeaseGenerateOptions,
  ): GenerationStream;
  /** Let go (once; later calls do nothing): the last holder's release terminates the worker. */
  release(): void;
}

const RELEASED = 'this engine lease was released';
const STOPPED_WHILE_WAITING =
  "the shared engine stopped while this run waited for another element's run (its worker crashed or its device was lost): load the models again";

class SharedEngine<M> {
  refs = 0;
  loading: Promise<LoadInfo> | null = null;
  /** A load was asked of it (until then it is new, and a holder may join it before its first holder loads). */
  started = false;
  failed = false;
  readonly listeners = new Set<(p: ProgressInfo) => void>();
  readonly warnings: ProgressInfo[] = [];
  private turnHeld = false;
  private readonly waiting: (() => void)[] = [];

  constructor(
    readonly key: string,
    readonly meta: M,
    readonly client: EngineLike,
  ) {}

  /** New, loading or loaded: a holder may join it (a failed load or a crashed worker is never handed out again). */
  get alive(): boolean {
    return !this.failed && (!this.started || this.loading !== null || this.client.info !== null);
  }

  load(options: ClientLoadOptions): Promise<LoadInfo> {
    if (this.loading) return this.loading;
    const info = this.client.info;
    if (info) return Promise.resolve(info);
    this.started = true;
    const promise = this.client.load({
      ...options,
      onProgress: (p) => {
        if (p.status === 'warning') this.warnings.push(p);
        for (const listener of [...this.listeners]) listener(p);
      },
    });
    this.loading = promise;
    promise.then(
      () => {
        if (this.loading === promise) this.loading = null;
      },
      () => {
        if (this.loading === promise) this.loading = null;
        this.failed = true;
      },
    );
    return promise;
  }

  /**
   * Wait for the engine's turn. Resolves with the function that hands it on (call it once), or null when `signal`
   * aborted first.
   */
  takeTurn(signal: AbortSignal, onWait?: (waiting: boolean) => void): Promise<(() => void) | null> {
    if (signal.aborted) return Promise.resolve(null);
    let handed = false;
    const handOn = () => {
      if (handed) return;
      handed = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.turnHeld = false;
    };
    if (!this.turnHeld) {
      this.turnHeld = true;
      return Promise.resolve(handOn);
    }
    onWait?.(true);
    return new Promise((resolve) => {
      const onAbort = () => {
        const i = this.waiting.indexOf(granted);
        if (i >= 0) this.waiting.splice(i, 1);
        resolve(null);
      };
      const granted = () => {
        signal.removeEventListener('abort', onAbort);
        try {
          onWait?.(false);
        } finally {
          resolve(handOn);
        }
      };
      this.waiting.push(granted);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/** A keyed set of shared engines, each held by reference count. */
export class EngineRegistry {
  private readonly engines = new Map<string, SharedEngine<unknown>>();

  constructor(private readonly makeClient: () => EngineLike = () => new EngineClient()) {}

  /** How many shared (not isolated) engines are alive or held now: for tests and diagnostics. */
  get size(): number {
    return this.engines.size;
  }

  /**
   * A lease on the engine for `key`: one loaded or loading for the same key is joined; else, with `serves`, a loaded
   * engine that serves this caller too (one loaded with more: heads, layer switches); else a new one. `isolated`
   * always gets a new engine of its own that no one else joins.
   */
  acquire<M>(
    key: string,
    meta: M,
    options: { isolated?: boolean; serves?: (meta: M, info: LoadInfo) => boolean } = {},
  ): EngineLease<M> {
    let engine: SharedEngine<M> | undefined;
    if (!options.isolated) {
      const same = this.engines.get(key) as SharedEngine<M> | undefined;
      if (same?.alive) engine = same;
      else if (options.serves)
        for (const e of this.engines.values() as IterableIterator<SharedEngine<M>>) {
          const info = e.client.info;
          if (e.alive && info && options.serves(e.meta, info)) {
            engine = e;
            break;
          }
        }
    }
    if (!engine) {
      engine = new SharedEngine(key, meta, this.makeClient());
      // A dead engine under this key stays with its holders until they let go, but is never handed out again.
      if (!options.isolated) this.engines.set(key, engine as SharedEngine<unknown>);
    }
    return this.lease(engine, !!options.isolated);
  }

  private lease<M>(engine: SharedEngine<M>, isolated: boolean): EngineLease<M> {
    engine.refs++;
    let held = true;
    let listener: ((p: ProgressInfo) => void) | null = null;
    const registry = this.engines;
    // A load this holder waits on ends when it lets go, though the engine's load goes on for the others: its caller
    // learns it was let go (the element says 'load superseded' or 'load stopped'), as when a worker of its own ended.
    let letGo: (e: Error) => void = () => {};
    const released = new Promise<never>((_, reject) => {
      letGo = reject;
    });
    released.catch(() => {});
    return {
      meta: engine.meta,
      isolated,
      get info() {
        return engine.client.info;
      },
      get holders() {
        return engine.refs;
      },
      load(options) {
        if (!held) return Promise.reject(new Error(RELEASED));
        if (options.onProgress && !listener) {
          listener = options.onProgress;
          engine.listeners.add(listener);
          for (const w of engine.warnings) listener(w);
        }
        return Promise.race([engine.load(options), released]);
      },
      generate(prompt, options) {
        if (!held) throw new Error(RELEASED);
        checkPromptShape(prompt);
        const { signal, onWait: told, ...rest } = options;
        let waited = false;
        const onWait = (waiting: boolean) => {
          if (waiting) waited = true;
          told?.(waiting);
        };
        // The run's own stop: the caller's signal, or its loop left early (break) while it waits or runs.
        const stop = new AbortController();
        const onAbort = () => stop.abort();
        if (signal?.aborted) stop.abort();
        else signal?.addEventListener('abort', onAbort, { once: true });
        const started = engine.takeTurn(stop.signal, onWait).then((handOn) => {
          if (!handOn) return null;
          if (waited && engine.client.info === null) {
            // The engine stopped while this run waited (its worker crashed, or its device was lost, in another
            // holder's run): said as that, not as a run started before any load.
            handOn();
            throw new Error(STOPPED_WHILE_WAITING);
          }
          try {
            const inner = engine.client.generate(prompt, { ...rest, signal: stop.signal });
            inner.result.then(handOn, handOn);
            return inner;
          } catch (e) {
            handOn();
            throw e;
          }
        });
        const result = started
          .then((inner) => (inner ? inner.result : cancelledBeforeStart()))
          .finally(() => signal?.removeEventListener('abort', onAbort));
        result.catch(() => {}); // a consumer that only iterates still sees the error through the iterator
        async function* rounds(): AsyncGenerator<RoundEvent> {
          try {
            const inner = await started;
            if (inner) yield* inner;
          } finally {
            stop.abort();
          }
        }
        return streamOnce(result, () => {
          const it = rounds();
          // A loop left before its first round (a return() before any next()) never enters rounds(), whose finally
          // would stop the run: stopped here too, so a waiting run leaves the queue.
          return Object.assign(Object.create(Object.getPrototypeOf(it)) as AsyncGenerator<RoundEvent>, {
            next: (...a: [] | [unknown]) => it.next(...a),
            return: (v: unknown) => {
              stop.abort();
              return it.return(v);
            },
            throw: (e: unknown) => it.throw(e),
          });
        });
      },
      release() {
        if (!held) return;
        held = false;
        letGo(new Error(RELEASED));
        if (listener) engine.listeners.delete(listener);
        if (--engine.refs > 0) return;
        if (registry.get(engine.key) === (engine as SharedEngine<unknown>)) registry.delete(engine.key);
        engine.client.terminate();
      },
    };
  }
}

/** The page's shared engines (every <spec-decoder> that does not ask for its own). */
export const sharedEngines = new EngineRegistry();
