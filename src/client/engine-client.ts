/**
 * EngineClient: the main-thread handle on the engine worker. load() with a progress callback, generate() as an
 * async iterator of RoundEvents (its `result` promise holds the summary), cancellation through an AbortSignal.
 * Errors inside the worker, a lost GPU device, or a crashed worker come back as readable errors; the next load()
 * starts a fresh worker, so a page never needs a reload.
 */
import type { GenerationResult, RoundEvent } from '../engine/events';
import type { ProgressInfo } from '../model/source';
import type { ChatMessage } from '../model/tokenizer';
import { defaultOrtBase } from '../runtime/ort-base';
import type { FromWorker, GenerateRequest, LoadInfo, LoadRequest, ToWorker, WorkerError } from '../worker/protocol';

export class EngineError extends Error {
  constructor(error: WorkerError) {
    super(error.message);
    this.name = error.name;
  }
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

export interface ClientGenerateOptions extends Omit<GenerateRequest, 'prompt'> {
  signal?: AbortSignal;
}

/** A running generation: iterate it for rounds; `result` settles when it ends. */
export interface GenerationStream extends AsyncIterable<RoundEvent> {
  readonly result: Promise<GenerationResult>;
}

interface Pending {
  onMessage(msg: FromWorker): void;
  onFailure(error: Error): void;
}

const docBase = () => (typeof document !== 'undefined' ? document.baseURI : globalThis.location.href);

export class EngineClient {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private loaded: LoadInfo | null = null;

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
    worker.onerror = (event) => {
      event.preventDefault();
      this.fail(new Error(`the engine worker crashed: ${event.message || 'unknown error'}; load the models again`));
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
    this.ensureWorker().postMessage(msg);
  }

  async load(options: ClientLoadOptions): Promise<LoadInfo> {
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
    this.loaded = null;
    return new Promise<LoadInfo>((resolve, reject) => {
      this.send(
        { type: 'load', id, request },
        {
          onMessage: (msg) => {
            if (msg.type === 'progress') options.onProgress?.(msg.info);
            else if (msg.type === 'loaded') {
              this.pending.delete(id);
              this.loaded = msg.info;
              resolve(msg.info);
            } else if (msg.type === 'error') {
              this.pending.delete(id);
              reject(new EngineError(msg.error));
            }
          },
          onFailure: reject,
        },
      );
    });
  }

  /** Generate from a text prompt, or from chat messages through the target's chat template. */
  generate(prompt: string | { messages: ChatMessage[] }, options: ClientGenerateOptions): GenerationStream {
    const id = this.nextId++;
    const { signal, ...rest } = options;
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
      signal?.removeEventListener('abort', onAbort);
      wake?.();
    };
    const onAbort = () => this.worker?.postMessage({ type: 'cancel', id } satisfies ToWorker);
    if (!this.loaded) {
      const error = new Error('no models loaded: call load() first');
      end(error);
      settle.reject(error);
    } else {
      signal?.addEventListener('abort', onAbort, { once: true });
      this.send(
        {
          type: 'generate',
          id,
          request:
            typeof prompt === 'string' ? { prompt, ...rest } : { prompt: '', messages: prompt.messages, ...rest },
        },
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
      );
      if (signal?.aborted) onAbort();
    }
    return {
      result,
      async *[Symbol.asyncIterator]() {
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
      },
    };
  }

  /** Stop the worker and free its models (GPU memory included). */
  terminate(): void {
    this.fail(new Error('the engine client was terminated'));
  }
}

function defaultWorker(): Worker {
  return new Worker(new URL('../worker/engine-worker.ts', import.meta.url), {
    type: 'module',
    name: 'spec-decoder-engine',
  });
}
