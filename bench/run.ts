/**
 * `npm run bench`: the benchmark on the backends asked for (see bench/options.ts or --help). wasm and WebGPU (Dawn)
 * in Node run in-process; wasm and WebGPU in Chromium run the same harness in a worker of the built site's bench
 * page, driven by Playwright. Prints markdown tables and writes bench/results/<date>-<machine>.json and latest.md.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { DEFAULT_HEADS } from '../src/cli/args';
import { type BenchPrompt, type BenchReport, markdown, runBench } from './harness';
import { nodeWasmEngines } from './heads-engines';
import { BENCH_USAGE, type BenchCli, BenchUsageError, parseBenchArgs, partialRun, selectPrompts } from './options';

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

const reports: Record<string, BenchReport | { error: string }> = {};
const tables: string[] = [];

if (cli.backends.includes('node-wasm')) {
  console.log(`== node-wasm (onnxruntime-web wasm EP in Node, ${cli.threads} thread(s))`);
  const { engine, engineFor, release } = await nodeWasmEngines(cli.methods, cli.threads, (l) => console.log(`  ${l}`));
  const report = await runBench(engine, {
    engineFor,
    prompts: selectPrompts(allPrompts, cli.categories, cli.promptsPerCategory),
    methods: cli.methods,
    maxNewTokens: cli.maxNewTokens ?? 64,
    repeats: cli.repeats ?? 2,
    curveQs: cli.quick ? [1, 2, 4, 8] : [1, 2, 4, 8, 16, 32, 64],
    curveReps: cli.quick ? 2 : 7,
    log: (l) => console.log(`  ${l}`),
  });
  await release();
  reports['node-wasm'] = report;
  tables.push(markdown('wasm in Node', report));
  console.log(`\n${tables[tables.length - 1]}\n`);
}

if (cli.backends.includes('node-cold')) {
  console.log('== node-cold (first generations in fresh Node processes)');
  const { benchCold, coldMarkdown } = await import('./cold');
  const cold = benchCold({
    methods: ['ar', 'auto'],
    processes: 3,
    maxNewTokens: cli.maxNewTokens ?? 64,
    log: (l) => console.log(`  ${l}`),
  });
  reports['node-cold'] = cold as never;
  tables.push(coldMarkdown(cold));
  console.log(`\n${tables[tables.length - 1]}\n`);
}

if (cli.backends.includes('node-cli')) {
  console.log('== node-cli (every method through the CLI, against the warmed-up harness)');
  const { benchCliCheck, cliCheckMarkdown } = await import('./cli-check');
  const check = await benchCliCheck({
    methods: cli.methods,
    prompts: selectPrompts(allPrompts, cli.categories, cli.promptsPerCategory ?? 2),
    maxNewTokens: cli.maxNewTokens ?? 64,
    log: (l) => console.log(`  ${l}`),
  });
  reports['node-cli'] = check as never;
  tables.push(cliCheckMarkdown(check));
  console.log(`\n${tables[tables.length - 1]}\n`);
}

if (cli.backends.includes('node-memory')) {
  console.log('== node-memory (what each method holds, in fresh Node processes)');
  const { benchMemory, memoryMarkdown } = await import('./memory');
  const wanted = (m: string) => cli.methods.includes(m as never);
  const memory = benchMemory({
    runs: [
      // auto here runs on the target alone: one model under the default method (it calibrates: wide calls).
      ...['ar', 'auto', 'swift', 'chain', 'eagle']
        .filter((m) => m === 'ar' || wanted(m))
        .map((method) => ({ method, device: 'wasm' as const })),
      ...['ar', 'auto', 'swift']
        .filter((m) => m === 'ar' || wanted(m))
        .map((method) => ({ method, device: 'webgpu' as const })),
    ],
    log: (l) => console.log(`  ${l}`),
  });
  reports['node-memory'] = memory as never;
  tables.push(memoryMarkdown(memory));
  console.log(`\n${tables[tables.length - 1]}\n`);
}

// After node-wasm: WebGPU in Node sets V8 to Liftoff only for the rest of this process (see ort-node-webgpu.ts).
if (cli.backends.includes('node-webgpu')) {
  console.log('== node-webgpu (onnxruntime-web WebGPU EP in Node, on Dawn)');
  const { benchNodeWebGpu, nodeWebGpuMarkdown } = await import('./node-webgpu');
  const r = await benchNodeWebGpu({
    target: 'public/models/austen-target',
    draft: 'public/models/austen-draft',
    heads: DEFAULT_HEADS,
    prompts: allPrompts,
    cli,
    log: (l) => console.log(`  ${l}`),
  });
  reports['node-webgpu'] = r as never;
  if ('error' in r) console.log(`\nnode-webgpu: ${r.error}\n`);
  else {
    tables.push(nodeWebGpuMarkdown(r));
    console.log(`\n${tables[tables.length - 1]}\n`);
  }
}

const browserBackends = cli.backends.filter((b) => b.startsWith('chromium-'));
if (browserBackends.length > 0) {
  const { runBrowserBenches } = await import('./browser-driver');
  const browser = await runBrowserBenches(browserBackends, allPrompts, cli);
  for (const [name, r] of Object.entries(browser.reports)) {
    reports[name] = r;
    if ('cells' in r) {
      tables.push(markdown(name.replace('chromium-', 'Chromium ').replace('webgpu', 'WebGPU'), r));
      console.log(`\n${tables[tables.length - 1]}\n`);
    } else console.log(`\n${name}: ${r.error}\n`);
  }
  if (browser.cold) {
    reports['chromium-cold'] = browser.cold as never;
    if ('first' in browser.cold) {
      const { browserColdMarkdown } = await import('./cold');
      tables.push(browserColdMarkdown(browser.cold));
      console.log(`\n${tables[tables.length - 1]}\n`);
    } else console.log(`\ncold (Chromium): ${browser.cold.error}\n`);
  }
  if (browser.peer) {
    reports.peer = browser.peer as never;
    if ('markdown' in browser.peer) {
      tables.push(browser.peer.markdown);
      console.log(`\n${browser.peer.markdown}\n`);
    } else console.log(`\npeer: ${browser.peer.error}\n`);
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
