/**
 * EngineClient: the main-thread handle on the engine worker. load() with a progress callback, generate() as an
 * async iterator of RoundEvents (its `result` promise holds the summary), cancellation through an AbortSignal.
 * Errors inside the worker, a lost GPU device, or a crashed worker come back as readable errors; the next load()
 * starts a fresh worker, so a page never needs a reload.
 */
import type { GenerationResult, RoundEvent } from '../engine/events';
import { checkPromptShape } from '../engine/prompt';
import { StatsTracker } from '../engine/stats';
import type { ProgressInfo } from '../model/source';
import type { ChatMessage } from '../model/tokenizer';
import { defaultOrtBase } from '../runtime/ort-base';
import { isThreadCount } from '../runtime/threads';
import type { FromWorker, GenerateRequest, LoadInfo, LoadRequest, ToWorker, WorkerError } from '../worker/protocol';

export class EngineError extends Error {
  /** What a generation that failed part-way had made (GenerationError.partial in the worker). */
  readonly partial?: GenerationResult;
  constructor(error: WorkerError) {
    super(error.message);
    this.name = error.name;
    if (error.partial) this.partial = error.partial;
  }
}

/** A generation that never reached the worker (its signal was aborted first): nothing made. */
export function cancelledBeforeStart(): GenerationResult {
  return { tokens: [], text: '', stopReason: 'cancelled', stats: new StatsTracker().summary(0) };
}

export interface ClientLoadOptions
  extends Partial<
    Pick<
      LoadRequest,
      | 'device'
      | 'compute'
      | 'precision'
      | 'base'
      | 'ortBase'
      | 'hub'
      | 'layerSwitches'
      | 'exact'
      | 'heads'
      | 'gpuHeads'
      | 'draftDevice'
      | 'headsDevice'
      | 'threads'
    >
  > {
  target: string;
  draft?: string;
  onProgress?: (info: ProgressInfo) => void;
}

export interface ClientGenerateOptions extends Omit<GenerateRequest, 'prompt' | 'messages'> {
  signal?: AbortSignal;
}

/** A running generation: iterate it for rounds; `result` settles when it ends. */
export interface GenerationStream extends AsyncIterable<RoundEvent> {
  readonly result: Promise<GenerationResult>;
}

/** A generation's stream, read by one loop at most: a second iteration throws, naming `result` for the summary. */
export function streamOnce(
  result: Promise<GenerationResult>,
  rounds: () => AsyncIterator<RoundEvent>,
): GenerationStream {
  let iterated = false;
  return {
    result,
    [Symbol.asyncIterator]() {
      if (iterated) throw new Error('a generation stream can be iterated once (read `result` for the summary)');
      iterated = true;
      return rounds();
    },
  };
}

interface Pending {
  onMessage(msg: FromWorker): void;
  onFailure(error: Error): void;
}

const docBase = () => (typeof document !== 'undefined' ? document.baseURI : globalThis.location.href);

/** The generation this client has in the worker: when it settles, and how to stop it. */
interface Running {
  settled: Promise<unknown>;
  cancel(): void;
  cancelled: boolean;
}

export class EngineClient {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private loaded: LoadInfo | null = null;
  private running: Running | null = null;
  /** The last load() asked for: the next one waits for it (two at once broke the first with an onnxruntime error). */
  private loading: Promise<unknown> = Promise.resolve();
  /** load() calls not yet settled: a generate() meanwhile waits for them and runs on what they load. */
  private loadsUnderWay = 0;

  constructor(private readonly makeWorker: () => Worker = defaultWorker) {}

  /** What the last successful load() reported (device, fallback, models), or null. */
  get info(): LoadInfo | null {
    return this.loaded;
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const worker = this.makeWorker();
    worker.onmessage = (event: MessageEvent<FromWorker>) => {
      const msg = event.data;
      if (msg.type === 'device-lost') {
        this.fail(new EngineError(msg.error));
        return;
      }
      this.pending.get(msg.id)?.onMessage(msg);
    };
    const blocked = watchCspBlocks();
    worker.onerror = (event) => {
      event.preventDefault();
      if (event.message) {
        blocked.stop();
        this.fail(new Error(`the engine worker crashed: ${event.message}; load the models again`));
        return;
      }
      // A worker whose script never loaded (not served, blocked) reports an error event with no message at all. A
      // Content-Security-Policy block is told apart by its violation event, which may come just after.
      setTimeout(() => {
        blocked.stop();
        if (this.worker !== worker) return;
        const directive = blocked.directive();
        this.fail(
          new Error(
            directive
              ? `the page's Content-Security-Policy (${directive}) blocks the engine worker: allow its script's origin in worker-src (e.g. worker-src 'self' blob:)`
              : "the engine worker failed to start or crashed without a message: check that its script (the library's engine-worker file) is served, then load the models again",
          ),
        );
      }, 50);
    };
    worker.onmessageerror = () => this.fail(new Error('the engine worker sent a message that could not be read'));
    this.worker = worker;
    return worker;
  }

  /** The worker is gone or unusable: fail everything in flight and start afresh on the next call. */
  private fail(error: Error): void {
    this.worker?.terminate();
    this.worker = null;
    this.loaded = null;
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) p.onFailure(error);
  }

  private send(msg: ToWorker, pending: Pending): void {
    this.pending.set(msg.id, pending);
    try {
      this.ensureWorker().postMessage(msg);
    } catch (e) {
      this.pending.delete(msg.id);
      throw e;
    }
  }

  /**
   * send(), a request that cannot be sent (it does not survive structured cloning: a reactive proxy, a function)
   * failing in one line through `failed` instead of throwing where nobody catches it: a generate() whose messages were
   * a Vue reactive array left its result pending and the client refusing every later generate() and load().
   */
  private sendOrFail(what: string, msg: ToWorker, pending: Pending, failed: (error: Error) => void): void {
    try {
      this.send(msg, pending);
    } catch (e) {
      const cause = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
      const hint =
        e instanceof Error && e.name === 'DataCloneError'
          ? '; pass plain data (plain objects and arrays, not proxies or functions)'
          : '';
      failed(new TypeError(`${what}: the request could not be sent to the engine worker (${cause})${hint}`));
    }
  }

  /**
   * Load models (a fresh engine in this worker). A generation in progress is stopped first and ends as cancelled,
   * with what it made; a load() already under way finishes first.
   */
  load(options: ClientLoadOptions): Promise<LoadInfo> {
    const t = options.threads;
    if (t !== undefined && t !== 'auto' && !isThreadCount(t))
      return Promise.reject(new RangeError(`threads must be 'auto' or a whole number from 1 to 64; got ${String(t)}`));
    const running = this.running;
    running?.cancel();
    const previous = this.loading;
    const next = Promise.all([previous.catch(() => undefined), running?.settled]).then(() => this.loadNow(options));
    this.loadsUnderWay++;
    this.loading = next.catch(() => undefined).finally(() => this.loadsUnderWay--);
    return next;
  }

  private async loadNow(options: ClientLoadOptions): Promise<LoadInfo> {
    const id = this.nextId++;
    const base = options.base ?? docBase();
    const request: LoadRequest = {
      target: options.target,
      ...(options.draft ? { draft: options.draft } : {}),
      device: options.device ?? 'auto',
      ...(options.compute ? { compute: options.compute } : {}),
      ...(options.precision ? { precision: options.precision } : {}),
      base,
      ortBase: options.ortBase ?? defaultOrtBase(base),
      ...(options.hub ? { hub: options.hub } : {}),
      ...(options.layerSwitches ? { layerSwitches: true } : {}),
      ...(options.exact ? { exact: true } : {}),
      ...(options.heads ? { heads: options.heads } : {}),
      ...(options.gpuHeads ? { gpuHeads: options.gpuHeads } : {}),
      ...(options.draftDevice ? { draftDevice: options.draftDevice } : {}),
      ...(options.headsDevice ? { headsDevice: options.headsDevice } : {}),
      ...(options.threads !== undefined ? { threads: options.threads } : {}),
    };
    const before = this.loaded;
    this.loaded = null;
    let progressFailed = false;
    return new Promise<LoadInfo>((resolve, reject) => {
      const pending: Pending = {
        onMessage: (msg) => {
          if (msg.type === 'restart') {
            // The worker cannot load again (it ran on WebGPU, or its onnxruntime came from another wasm folder): the
            // same load goes to a fresh worker.
            this.worker?.terminate();
            this.worker = null;
            this.sendOrFail('load', { type: 'load', id, request }, pending, reject);
          } else if (msg.type === 'progress') {
            try {
              options.onProgress?.(msg.info);
            } catch (e) {
              // The page's callback failing is the page's: said once, and the load goes on.
              if (!progressFailed) console.error(`spec-decoder: onProgress threw: ${(e as Error).message}`);
              progressFailed = true;
            }
          } else if (msg.type === 'loaded') {
            this.pending.delete(id);
            this.loaded = msg.info;
            resolve(msg.info);
          } else if (msg.type === 'error') {
            this.pending.delete(id);
            // Refused before the worker let go of its engine (a bad option): the models loaded before still serve.
            if (msg.error.kept) this.loaded = before;
            reject(new EngineError(msg.error));
          }
        },
        onFailure: reject,
      };
      // Not sent (it does not survive structured cloning): the worker still holds the models loaded before.
      this.sendOrFail('load', { type: 'load', id, request }, pending, (error) => {
        this.loaded = before;
        reject(error);
      });
    });
  }

  /**
   * Generate from a text prompt, token ids, or chat messages through the target's chat template. One generation at
   * a time: it ends when it runs out, its signal aborts, or its loop is left early (break, return()); a generate()
   * while one runs is refused, and one called right after a stop waits for the stopped one to end in the worker.
   */
  generate(
    prompt: string | readonly number[] | { messages: ChatMessage[] },
    options: ClientGenerateOptions,
  ): GenerationStream {
    checkPromptShape(prompt);
    if (typeof options !== 'object' || options === null)
      throw new TypeError('generate() needs options: { method, maxNewTokens, … }');
    const { signal, ...rest } = options;
    if (signal !== undefined && typeof (signal as AbortSignal).addEventListener !== 'function')
      throw new TypeError('options.signal must be an AbortSignal');
    const id = this.nextId++;
    const queue: RoundEvent[] = [];
    let wake: (() => void) | null = null;
    let finished = false;
    let failure: Error | null = null;
    let settle!: { resolve: (r: GenerationResult) => void; reject: (e: Error) => void };
    const result = new Promise<GenerationResult>((resolve, reject) => {
      settle = { resolve, reject };
    });
    result.catch(() => {}); // a consumer that only iterates still sees the error through the iterator
    const end = (error: Error | null) => {
      finished = true;
      failure = error;
      this.pending.delete(id);
      // At once, not a tick later: a generate() right after `await result` finds the client free.
      if (this.running === running) this.running = null;
      signal?.removeEventListener('abort', onAbort);
      wake?.();
    };
    let started = false;
    const running: Running = {
      settled: result.catch(() => undefined),
      cancelled: false,
      cancel: () => {
        running.cancelled = true;
        if (started) this.worker?.postMessage({ type: 'cancel', id } satisfies ToWorker);
      },
    };
    const onAbort = () => running.cancel();
    const previous = this.running;
    const refuse = (error: Error) => {
      end(error);
      settle.reject(error);
    };
    const loadFirst = this.loadsUnderWay > 0;
    if (!this.loaded && !loadFirst) refuse(new Error('no models loaded: call load() first'));
    else if (previous && !previous.cancelled)
      refuse(
        new Error(
          'a generation is already running on this client: abort its signal or leave its loop (break) first, or wait for its result',
        ),
      );
    else if (signal?.aborted) {
      // Nothing reaches the worker: the run ends before its first round, with nothing made.
      settle.resolve(cancelledBeforeStart());
      end(null);
    } else {
      this.running = running;
      signal?.addEventListener('abort', onAbort, { once: true });
      // The prompt given wins over a `messages` among the options (JavaScript callers): it overrode a text prompt.
      const request: GenerateRequest =
        typeof prompt === 'string'
          ? { ...rest, prompt, messages: undefined }
          : 'messages' in prompt
            ? { ...rest, prompt: '', messages: prompt.messages }
            : { ...rest, prompt: Array.from(prompt), messages: undefined };
      // Right after a stop, the stopped run may still be ending in the worker: this one waits for it. Right after a
      // load() not awaited, it waits for that load and runs on its models (sent first, it reached the worker before
      // the load, which then released the engine under it).
      void Promise.all([previous?.settled, loadFirst ? this.loading : undefined]).then(() => {
        if (finished) return;
        started = true;
        if (running.cancelled) {
          settle.resolve(cancelledBeforeStart());
          end(null);
          return;
        }
        if (!this.loaded) {
          refuse(new Error('no models loaded: the load() before this generate() did not succeed'));
          return;
        }
        this.sendOrFail(
          'generate',
          { type: 'generate', id, request },
          {
            onMessage: (msg) => {
              if (msg.type === 'round') {
                queue.push(msg.event);
                wake?.();
              } else if (msg.type === 'done') {
                settle.resolve(msg.result);
                end(null);
              } else if (msg.type === 'error') {
                const error = new EngineError(msg.error);
                settle.reject(error);
                end(error);
              }
            },
            onFailure: (error) => {
              settle.reject(error);
              end(error);
            },
          },
          (error) => {
            settle.reject(error);
            end(error);
          },
        );
      });
    }
    async function* rounds(): AsyncGenerator<RoundEvent> {
      try {
        for (;;) {
          const next = queue.shift();
          if (next) {
            yield next;
            continue;
          }
          if (finished) {
            if (failure) throw failure;
            return;
          }
          await new Promise<void>((r) => {
            wake = r;
          });
          wake = null;
        }
      } finally {
        // Left early (break, return(), a throw in the loop): the run stops; `result` still settles, cancelled.
        if (!finished) running.cancel();
      }
    }
    // One reader: two would share the queue and the wake-up, and one of them wait forever.
    return streamOnce(result, rounds);
  }

  /** Stop the worker and free its models (GPU memory included). */
  terminate(): void {
    this.fail(new Error('the engine client was terminated'));
  }
}

/** The directives a worker's script is checked against (worker-src, falling back to child-src, script-src, default-src). */
const WORKER_DIRECTIVES = new Set(['worker-src', 'child-src', 'script-src', 'default-src']);

/**
 * Listens, while a worker starts (10 s at most), for the page's Content-Security-Policy refusing a worker script.
 * Outside a page (a worker, Node) it hears nothing.
 */
function watchCspBlocks(): { directive(): string | null; stop(): void } {
  let directive: string | null = null;
  const target = globalThis as {
    addEventListener?: typeof addEventListener;
    removeEventListener?: typeof removeEventListener;
  };
  const listener = (e: Event) => {
    const v = e as SecurityPolicyViolationEvent;
    // Enforced (a report-only policy blocks nothing), by a directive a worker's script falls under, and for a script
    // of this page's origin or a blob (the engine worker's), not an inline script or another site's.
    if (v.disposition !== 'enforce' || !WORKER_DIRECTIVES.has(v.effectiveDirective)) return;
    const uri = v.blockedURI ?? '';
    const ours = uri.startsWith('blob:') || (/^https?:/.test(uri) && new URL(uri).origin === location.origin);
    if (ours) directive ??= v.effectiveDirective;
  };
  if (typeof document === 'undefined' || !target.addEventListener) return { directive: () => null, stop: () => {} };
  target.addEventListener('securitypolicyviolation', listener);
  const stop = () => target.removeEventListener?.('securitypolicyviolation', listener);
  // Stop listening once the worker has had its chance to start.
  setTimeout(stop, 10_000);
  return { directive: () => directive, stop };
}

function defaultWorker(): Worker {
  return new Worker(new URL('../worker/engine-worker.ts', import.meta.url), {
    type: 'module',
    name: 'spec-decoder-engine',
  });
}
