/**
 * `npm run bench`: the benchmark on the backends asked for (see bench/options.ts or --help). wasm and WebGPU (Dawn)
 * in Node run in-process; wasm and WebGPU in Chromium run the same harness in a worker of the built site's bench
 * page, driven by Playwright. Prints markdown tables and writes bench/results/<date>-<N>cpu.json and latest.md.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { DEFAULT_HEADS } from '../src/cli/args';
import type { KeyValueStore } from '../src/engine/store';
import { type BenchPrompt, type BenchReport, countRun, earlierRuns, markdown, runBench } from './harness';
import { nodeWasmEngines } from './heads-engines';
import {
  BENCH_USAGE,
  type BenchCli,
  BenchUsageError,
  parseBenchArgs,
  partialRun,
  rememberedPaths,
  selectPrompts,
} from './options';
import { traceWriter } from './trace';

const promptFile = JSON.parse(readFileSync('bench/prompts.json', 'utf8')) as { prompts: BenchPrompt[] };
const allPrompts = promptFile.prompts.map(({ kind, text }) => ({ kind, text }));

let cli: BenchCli;
try {
  cli = parseBenchArgs(process.argv.slice(2), process.env, [...new Set(allPrompts.map((p) => p.kind))]);
} catch (e) {
  if (!(e instanceof BenchUsageError)) throw e;
  console.error(`error: ${e.message} (see npm run bench -- --help)`);
  process.exit(2);
}
if (cli.help) {
  console.log(BENCH_USAGE);
  process.exit(0);
}

const trace = cli.trace ? traceWriter(cli.trace) : null;
const reports: Record<string, BenchReport | { error: string }> = {};
const tables: string[] = [];

/** A backend's report goes into the results file, its table into the summary and onto the console. */
function publish(name: string, report: unknown, table: string): void {
  reports[name] = report as BenchReport;
  tables.push(table);
  console.log(`\n${table}\n`);
}

/** The wasm threads for the Node backends: asked for, or chosen as the CLI chooses them (remembered per machine). */
async function wasmThreads(): Promise<{ threads: number; said: string }> {
  if (cli.threads !== 'auto') return { threads: cli.threads, said: `${cli.threads} wasm thread(s) (asked for)` };
  const [{ chooseNodeWasmThreads }, { describeThreads }, { FileStore }] = await Promise.all([
    import('../src/runtime/thread-probe-node'),
    import('../src/runtime/thread-probe'),
    import('../src/runtime/store-node'),
  ]);
  const choice = await chooseNodeWasmThreads({
    target: 'public/models/austen-target',
    draft: 'public/models/austen-draft',
    store: new FileStore(),
  });
  return { threads: choice.threads, said: describeThreads(choice) };
}

/**
 * bench --remember: the Node engines' store, kept between bench runs, and how many runs of `backend` it holds (null
 * without the flag: every run starts from nothing). The run is counted once it has its report (countRun).
 */
async function rememberedStore(backend: string): Promise<{ store: KeyValueStore; earlierRuns: number } | null> {
  if (!cli.remember) return null;
  const { FileStore } = await import('../src/runtime/store-node');
  const store = new FileStore(rememberedPaths().records);
  const earlier = await earlierRuns(store, backend);
  console.log(`  remembering what the engines learned in ${earlier} earlier run(s) (${store.path})`);
  return { store, earlierRuns: earlier };
}

if (cli.backends.includes('node-wasm')) {
  const threads = await wasmThreads();
  console.log(`== node-wasm (onnxruntime-web wasm EP in Node, ${threads.said})`);
  const memory = await rememberedStore('node-wasm');
  const { engine, engineFor, release } = await nodeWasmEngines(
    cli.methods,
    threads.threads,
    (l) => console.log(`  ${l}`),
    cli.precision ?? undefined,
    cli.exact,
    cli.draftModel,
    memory?.store,
  );
  const report = await runBench(engine, {
    ...(memory ? { earlierRuns: memory.earlierRuns } : {}),
    runtime: threads.said,
    engineFor,
    prompts: selectPrompts(allPrompts, cli.categories, cli.promptsPerCategory),
    methods: cli.methods,
    maxNewTokens: cli.maxNewTokens ?? 64,
    repeats: cli.repeats ?? 2,
    curveQs: cli.quick ? [1, 2, 4, 8] : [1, 2, 4, 8, 16, 32, 64],
    curveReps: cli.quick ? 2 : 7,
    ...(cli.sampling ? { sampling: cli.sampling } : {}),
    ...(trace ? { onRound: trace.rounds('node-wasm') } : {}),
    log: (l) => console.log(`  ${l}`),
  });
  trace?.flush();
  await release();
  if (memory) await countRun(memory.store, 'node-wasm');
  publish('node-wasm', report, markdown('wasm in Node', report));
}

if (cli.backends.includes('node-cold')) {
  console.log('== node-cold (first generations in fresh Node processes)');
  const { benchCold, coldMarkdown } = await import('./cold');
  const cold = benchCold({
    methods: ['ar', 'auto'],
    processes: 3,
    // The CLI's choice on this machine (remembered or measured as it does), as the steady-state harness runs.
    threads: (await wasmThreads()).threads,
    maxNewTokens: cli.maxNewTokens ?? 64,
    log: (l) => console.log(`  ${l}`),
  });
  publish('node-cold', cold, coldMarkdown(cold));
}

if (cli.backends.includes('node-cli')) {
  console.log('== node-cli (every method through the CLI, against the warmed-up harness)');
  const { benchCliCheck, cliCheckMarkdown } = await import('./cli-check');
  const check = await benchCliCheck({
    threads: (await wasmThreads()).threads,
    methods: cli.methods,
    prompts: selectPrompts(allPrompts, cli.categories, cli.promptsPerCategory ?? 1),
    maxNewTokens: cli.maxNewTokens ?? 64,
    repeats: cli.repeats ?? 3,
    log: (l) => console.log(`  ${l}`),
  });
  publish('node-cli', check, cliCheckMarkdown(check));
}

if (cli.backends.includes('node-memory')) {
  console.log('== node-memory (what each method holds, in fresh Node processes)');
  const { benchMemory, memoryMarkdown } = await import('./memory');
  const wanted = (m: string) => cli.methods.includes(m as never);
  const memory = benchMemory({
    runs: [
      // auto here runs on the target alone: one model under the default method (it calibrates: wide calls).
      ...['ar', 'auto', 'swift', 'chain', 'eagle', 'medusa']
        .filter((m) => m === 'ar' || wanted(m))
        .map((method) => ({ method, device: 'wasm' as const })),
      ...['ar', 'auto', 'swift', 'eagle', 'medusa']
        .filter((m) => m === 'ar' || wanted(m))
        .map((method) => ({ method, device: 'webgpu' as const })),
    ],
    log: (l) => console.log(`  ${l}`),
  });
  publish('node-memory', memory, memoryMarkdown(memory));
}

// After node-wasm: WebGPU in Node sets V8 to Liftoff only for the rest of this process (see ort-node-webgpu.ts).
if (cli.backends.includes('node-webgpu')) {
  console.log('== node-webgpu (onnxruntime-web WebGPU EP in Node, on Dawn)');
  const { benchNodeWebGpu, nodeWebGpuMarkdown } = await import('./node-webgpu');
  const memory = await rememberedStore('node-webgpu');
  const r = await benchNodeWebGpu({
    target: 'public/models/austen-target',
    draft: 'public/models/austen-draft',
    heads: DEFAULT_HEADS,
    prompts: allPrompts,
    cli,
    ...(trace ? { onRound: trace.rounds('node-webgpu') } : {}),
    ...(memory ? { memory } : {}),
    log: (l) => console.log(`  ${l}`),
  });
  trace?.flush();
  if ('error' in r) {
    reports['node-webgpu'] = r;
    console.log(`\nnode-webgpu: ${r.error}\n`);
  } else {
    if (memory) await countRun(memory.store, 'node-webgpu');
    publish('node-webgpu', r, nodeWebGpuMarkdown(r));
  }
}

const browserBackends = cli.backends.filter((b) => b.startsWith('chromium-'));
if (cli.sampling && browserBackends.length > 0)
  console.log(
    `  note: ${browserBackends.join(', ')} decode greedily (--temperature applies to node-wasm and node-webgpu)`,
  );
if (browserBackends.length > 0) {
  const { runBrowserBenches } = await import('./browser-driver');
  const browser = await runBrowserBenches(browserBackends, allPrompts, cli, trace?.rounds);
  trace?.flush();
  for (const [name, r] of Object.entries(browser.reports)) {
    if ('cells' in r) publish(name, r, markdown(name.replace('chromium-', 'Chromium ').replace('webgpu', 'WebGPU'), r));
    else {
      reports[name] = r;
      console.log(`\n${name}: ${r.error}\n`);
    }
  }
  if (browser.cold) {
    if ('first' in browser.cold) {
      const { browserColdMarkdown } = await import('./cold');
      publish('chromium-cold', browser.cold, browserColdMarkdown(browser.cold));
    } else {
      reports['chromium-cold'] = browser.cold as never;
      console.log(`\ncold (Chromium): ${browser.cold.error}\n`);
    }
  }
  if (browser.peer) {
    if ('markdown' in browser.peer) publish('peer', browser.peer, browser.peer.markdown);
    else {
      reports.peer = browser.peer as never;
      console.log(`\npeer: ${browser.peer.error}\n`);
    }
  }
}

if (tables.length === 0) {
  console.error('error: no backend produced results; nothing written');
  process.exit(1);
}

const versions = {
  node: process.version,
  onnxruntimeWeb: JSON.parse(readFileSync('node_modules/onnxruntime-web/package.json', 'utf8')).version,
  transformers: JSON.parse(readFileSync('node_modules/@huggingface/transformers/package.json', 'utf8')).version,
  chromium: (() => {
    try {
      return execFileSync('/usr/bin/chromium', ['--version'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim();
    } catch {
      return 'not found';
    }
  })(),
};
const machine = {
  cpus: cpus().length,
  cpuModel: cpus()[0]?.model ?? 'unknown',
  memoryGiB: Math.round(totalmem() / 2 ** 30),
};
const date = new Date().toISOString();
// A quick run is a smoke test and a partial run answers one question: neither replaces the full run's files.
const partial = cli.quick ? null : partialRun(cli);
// A partial run's file carries the time too: two partial runs on one day must not overwrite each other.
const stamp = partial ? `${date.slice(0, 10)}T${date.slice(11, 16).replace(':', '')}` : date.slice(0, 10);
const file = `bench/results/${stamp}-${machine.cpus}cpu${cli.quick ? '-quick' : partial ? `-partial-${partial}` : ''}.json`;
writeFileSync(file, `${JSON.stringify({ date, machine, versions, args: process.argv.slice(2), reports }, null, 1)}\n`);
const summary = cli.quick ? 'bench/results/quick.md' : partial ? 'bench/results/partial.md' : 'bench/results/latest.md';
writeFileSync(
  summary,
  `${tables.join('\n\n')}\n\nMachine: ${machine.cpus} x ${machine.cpuModel}, ${machine.memoryGiB} GiB; ${JSON.stringify(versions)}; ${date}\n`,
);
console.log(`wrote ${file} and ${summary}`);
