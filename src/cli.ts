/**
 * Terminal front end: `npm run generate -- --prompt TEXT [options]`. Prints the text (coloured on a terminal: green
 * accepted, red struck-through rejected, blue target tokens) and a stats line, or one JSON object with --json.
 * It is also the contract the benchmarks and checks use. Flags: src/cli/args.ts; output: src/cli/output.ts.
 */
import { type CliOptions, enginePrompt, parseCli, USAGE, UsageError, verifiesDrafts } from './cli/args';
import { jsonResult, painter, type RoundIds, roundIds, statsLine, wantColour } from './cli/output';
import { methodSpec, roundCalls, uses } from './engine/drafters/index';
import { SpecEngine } from './engine/engine';
import { GenerationError, type GenerationResult } from './engine/events';
import { timingsText } from './engine/timings';
import { type DeviceChoice, placementNotes } from './model/index';
import type { ProgressInfo } from './model/source';
import { nodeRuntime } from './runtime/node-device';
import { FileStore } from './runtime/store-node';
import { javaScriptTieringFor } from './runtime/v8-tiering';

export { DEFAULT_DRAFT, DEFAULT_TARGET, parseCli } from './cli/args';
export { statsLine } from './cli/output';

/** Where the CLI writes; tests pass their own. */
export interface CliIO {
  out: (text: string) => void;
  err: (text: string) => void;
  colour: boolean;
  /**
   * Stops the generation at the next round: what it made is still printed (the text and the stats line, or the JSON
   * object with stop reason "cancelled"). The process's own aborts on Ctrl-C (SIGINT, reason 'interrupted', exit
   * status 130) or SIGTERM ('terminated', 143), and when the reader of stdout goes away (a pipe into `head`), reason
   * 'closed' (exit status 0).
   */
  signal?: AbortSignal;
}

/**
 * The process's streams, with Ctrl-C and a closed pipe turned into a stop (a second Ctrl-C exits at once), and any
 * other failure to write stdout (a full disk: ENOSPC) into a stop too, said in one line by settle().
 */
function processIO(): CliIO & { settle(code: number): Promise<number> } {
  const stop = new AbortController();
  let closed = false;
  let writeError: Error | null = null;
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    closed = true;
    // Thrown from the event, a full disk crashed a text run with a stack trace, and a JSON run exited 0 before the
    // error came, its object lost without a word.
    if (e.code !== 'EPIPE') writeError ??= e;
    stop.abort(e.code === 'EPIPE' ? 'closed' : 'write-failed');
  });
  // stderr into the same closed pipe (`2>&1 | head`): nowhere left to say anything, and no crash for it either.
  process.stderr.on('error', () => {});
  const on = (signal: NodeJS.Signals, reason: 'interrupted' | 'terminated') =>
    process.on(signal, () => {
      if (stop.signal.aborted) process.exit(EXIT_STATUS[reason]);
      stop.abort(reason);
    });
  on('SIGINT', 'interrupted');
  on('SIGTERM', 'terminated');
  return {
    out: (t) => {
      if (!closed) process.stdout.write(t);
    },
    err: (t) => process.stderr.write(t),
    colour: wantColour(process.env, process.stdout.isTTY),
    signal: stop.signal,
    /** The exit status once stdout has taken (or failed to take) everything written: a failed write is an error. */
    async settle(code: number): Promise<number> {
      if (!closed) await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
      await new Promise((resolve) => setImmediate(resolve));
      if (!writeError) return code;
      process.stderr.write(`error: cannot write the output (${writeError.message})\n`);
      return code === 0 ? 1 : code;
    },
  };
}

const ABORTED = Symbol('aborted');

/** Settles (with ABORTED) when the signal aborts; never without one. */
function untilAborted(signal: AbortSignal | undefined): Promise<typeof ABORTED> {
  return new Promise((resolve) => {
    if (signal?.aborted) resolve(ABORTED);
    else if (typeof signal?.addEventListener === 'function')
      signal.addEventListener('abort', () => resolve(ABORTED), { once: true });
  });
}

/** Exit statuses of a run stopped by a signal, as shells report them (128 + the signal's number). */
const EXIT_STATUS = { interrupted: 130, terminated: 143 } as const;

/** The exit status of a run that ended as `stopReason` says. */
function exitStatus(stopReason: string, signal: AbortSignal | undefined): number {
  const reason = signal?.reason as keyof typeof EXIT_STATUS | undefined;
  return stopReason === 'cancelled' && reason !== undefined && reason in EXIT_STATUS ? EXIT_STATUS[reason] : 0;
}

export async function main(argv: string[], io: CliIO = processIO()): Promise<number> {
  let options: CliOptions;
  try {
    options = parseCli(argv);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.err(`error: ${e.message} (see --help)\n`);
    return 2;
  }
  if (options.help) {
    io.out(`${USAGE}\n`);
    return 0;
  }
  // WebGPU in Node runs on Dawn; the adapter (or why there is none and wasm is used) goes to stderr. One generation
  // and out: wasm compiled so that the first generation is not the slow one (ort-node.ts, wasmTieringFor).
  // Measured costs, found skip sets and the wasm thread count are remembered between runs (SPEC_DECODER_CACHE
  // moves the file).
  for (const line of options.unused) io.err(`note: ${line}\n`);
  const store = new FileStore();
  // A damaged records file reads as empty and is rewritten: said once, as the slower start is its cost.
  const storeProblem = store.problem;
  if (storeProblem) io.err(`note: ${storeProblem}\n`);
  const spec = methodSpec(options.method);
  const usesDraft = uses(spec, 'draft-model');
  // A signal while the models load (a slow download, a hub that does not answer) ends the run there: nothing has
  // been generated to keep. The load itself is left behind (the process exits).
  const stopped = untilAborted(io.signal);
  const stoppedWhileLoading = () => {
    io.err(`stopped while loading the models (${String(io.signal?.reason)})\n`);
    return exitStatus('cancelled', io.signal);
  };
  // What the hub's loads report besides the bytes: a file downloaded (not read from the cache), and warnings
  // (offline: the cached copy is used; a cache that could not keep a file). The thread probe loads the models first,
  // so a first run's downloads are reported from there.
  const onProgress = (p: ProgressInfo) => {
    if (p.status === 'download') io.err(`downloading ${p.name}: ${p.file}\n`);
    else if (p.status === 'warning') io.err(`warning: ${p.message}\n`);
  };
  const runtime = await Promise.race([
    nodeRuntime(
      options.device,
      (line) => io.err(`${line}\n`),
      options.threads === 'auto'
        ? { auto: { target: options.target, ...(usesDraft ? { draft: options.draft } : {}), store, onProgress } }
        : options.threads,
      { maxNewTokens: options.maxNewTokens },
    ),
    stopped,
  ]);
  if (runtime === ABORTED) return stoppedWhileLoading();
  // Once WebGPU has started (a fallback to wasm uses the count).
  if (runtime.device === 'webgpu' && options.threadsAsked)
    io.err("note: --threads is not used: the target runs on WebGPU (onnxruntime's wasm threads stay its default)\n");
  // A draft model or heads asked for on WebGPU beside a target on wasm (asked, or no adapter) run on wasm: say so.
  if (runtime.device === 'wasm')
    for (const line of placementNotes(
      usesDraft ? options.draftDevice : undefined,
      options.heads ? options.headsDevice : undefined,
      '--draft-device',
      '--heads-device',
    ))
      io.err(`note: ${line}\n`);
  let engine: SpecEngine;
  try {
    const loading = SpecEngine.load(runtime.ort, {
      target: options.target,
      ...(usesDraft ? { draft: options.draft } : {}),
      // Layer skipping (swift) needs the target built with layer switches; other methods run without them.
      ...(spec.needs.includes('target-self') ? { layerSwitches: true } : {}),
      ...(options.heads ? { heads: options.heads } : {}),
      device: runtime.device,
      // A draft on WebGPU next to a target that fell back to wasm would need the adapter that was not there.
      ...(options.draftDevice && runtime.device === 'webgpu' ? { draftDevice: options.draftDevice } : {}),
      ...(options.headsDevice && runtime.device === 'webgpu' ? { headsDevice: options.headsDevice } : {}),
      precision: options.precision,
      ...(options.exact ? { exact: true } : {}),
      store,
      onProgress,
    });
    const loaded = await Promise.race([loading, stopped]);
    if (loaded === ABORTED) {
      loading.then(
        (e) => e.release(),
        () => undefined,
      );
      return stoppedWhileLoading();
    }
    engine = loaded;
  } catch (e) {
    io.err(`error: ${(e as Error).message}\n`);
    await runtime.shutdown();
    return 2;
  }
  // A short generation keeps its JavaScript on V8's baseline tiers unless its rounds call a draft model
  // (v8-tiering.ts, by what the rounds call; the load's was optimised as usual).
  const javaScript =
    runtime.device === 'wasm' ? javaScriptTieringFor(options.maxNewTokens, roundCalls(spec)) : 'default';
  const paint = painter(io.colour);
  const ran = {
    device: runtime.device,
    threads: runtime.threads?.threads ?? 0,
    javaScript,
    ...(runtime.threads ? { threadChoice: { how: runtime.threads.how, timings: runtime.threads.timings } } : {}),
    target: { precision: engine.target.precision, graph: engine.target.variant, exact: engine.target.exact },
    ...(engine.draft && engine.draftDevice
      ? { draft: { ...placed(engine.draftDevice), precision: engine.draft.precision } }
      : {}),
    ...(engine.heads && engine.headsDevice
      ? { heads: { ...placed(engine.headsDevice), precision: engine.heads.compute } }
      : {}),
  };
  const rounds: RoundIds[] = [];
  try {
    const it = engine.generate(enginePrompt(options), {
      method: options.method,
      maxNewTokens: options.maxNewTokens,
      sampling: options.sampling,
      verifyRule: options.verify,
      ...(io.signal ? { signal: io.signal } : {}),
    });
    // The prompt is echoed with the first round, so a run refused before generating anything (a prompt over the
    // context, heads of the other kind) prints only its error.
    let echoed = options.json;
    const echo = () => {
      if (!echoed) io.out(options.chat ? '' : options.prompt);
      echoed = true;
    };
    let result: GenerationResult;
    for (;;) {
      const step = await it.next();
      if (step.done) {
        result = step.value;
        break;
      }
      rounds.push(roundIds(step.value));
      echo();
      if (!options.json) io.out(paint.round(step.value));
    }
    if (options.json) io.out(`${jsonResult(result, rounds, undefined, engine.timings, ran)}\n`);
    else {
      // stdout is the text; the stats and notes go to stderr (both show on a terminal).
      echo();
      io.out('\n');
      io.err(`\n${paint.dim(statsLine(result, options.method))}\n${paint.dim(timingsText(engine.timings))}\n`);
      if (options.verify === 'typical' && options.sampling.temperature > 0 && verifiesDrafts(options.method)) {
        io.err(
          `${paint.dim("note: typical acceptance is LOSSY: the output is not exactly the target's distribution")}\n`,
        );
      }
    }
    return exitStatus(result.stopReason, io.signal);
  } catch (e) {
    // Whatever was generated before the failure is kept: printed already as text, or in the JSON object.
    if (e instanceof GenerationError && options.json)
      io.out(`${jsonResult(e.partial, rounds, e, engine.timings, ran)}\n`);
    io.err(`${!options.json && rounds.length > 0 ? '\n' : ''}error: ${(e as Error).message}\n`);
    return 2;
  } finally {
    await engine.release();
    await runtime.shutdown();
    // Said once, at the end: the next run measures again what this one could not keep (costs, auto's arms, threads).
    await store.settled();
    const unsaved = store.writeProblem;
    if (unsaved) io.err(`note: ${unsaved}\n`);
  }
}

/** Where a draft model or heads ran, how that was decided, and the timed calls when it was measured (the JSON). */
function placed(choice: DeviceChoice): { device: string; how: string; timings?: readonly object[] } {
  return {
    device: choice.device,
    how: choice.how,
    ...(choice.timings.length > 0 ? { timings: choice.timings } : {}),
  };
}

/**
 * The CLI as a process runs it (this file run directly, and `npm run generate` through tools/bootstrap.mjs): its
 * exit status once stdout has taken everything (a failed write is an error of its own).
 */
export async function runProcess(argv: string[]): Promise<number> {
  const io = processIO();
  return io.settle(await main(argv, io));
}

// Run when executed directly (tsx src/cli.ts …), not when imported by tests.
if (process.argv[1] && /cli\.[cm]?[jt]s$/.test(process.argv[1])) {
  runProcess(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e) => {
      console.error(`error: ${(e as Error).stack ?? e}`);
      process.exit(1);
    },
  );
}
