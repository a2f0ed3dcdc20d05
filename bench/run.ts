/**
 * `npm run bench`: the benchmark on every backend available here. wasm and WebGPU (Dawn) in Node run in-process;
 * wasm and WebGPU in Chromium run the same harness in a worker of the built site's bench page, driven by Playwright.
 * Prints markdown tables and writes bench/results/<date>-<machine>.json.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { parseArgs } from 'node:util';
import { METHODS, type Method } from '../src/engine/drafters/index';
import { SpecEngine } from '../src/engine/engine';
import { ortForNode } from '../src/runtime/ort-node';
import { type BenchReport, markdown, runBench } from './harness';

const { values } = parseArgs({
  options: {
    backends: { type: 'string', default: 'node-wasm,node-webgpu,chromium-wasm,chromium-webgpu' },
    prompts: { type: 'string', default: '24' },
    repeats: { type: 'string', default: '2' },
    'max-new-tokens': { type: 'string', default: '64' },
    threads: { type: 'string', default: '1' },
  },
});

const promptFile = JSON.parse(readFileSync('bench/prompts.json', 'utf8')) as {
  prompts: { kind: string; text: string }[];
};
const allPrompts = promptFile.prompts.map((p) => p.text);
const backends = String(values.backends).split(',');
const methods: Method[] = [...METHODS];
const reports: Record<string, BenchReport | { error: string }> = {};
const tables: string[] = [];

if (backends.includes('node-wasm')) {
  const threads = Number(values.threads);
  console.log(`== node-wasm (onnxruntime-web wasm EP in Node, ${threads} thread(s))`);
  const engine = await SpecEngine.load(ortForNode(threads), {
    target: 'public/models/austen-target',
    draft: 'public/models/austen-draft',
    device: 'wasm',
  });
  const report = await runBench(engine, {
    prompts: allPrompts.slice(0, Number(values.prompts)),
    methods,
    maxNewTokens: Number(values['max-new-tokens']),
    repeats: Number(values.repeats),
    curveQs: [1, 2, 4, 8, 16, 32, 64],
    curveReps: 7,
    log: (l) => console.log(`  ${l}`),
  });
  await engine.release();
  reports['node-wasm'] = report;
  tables.push(markdown('wasm in Node', report));
  console.log(`\n${tables[tables.length - 1]}\n`);
}

// After node-wasm: WebGPU in Node sets V8 to Liftoff only for the rest of this process (see ort-node-webgpu.ts).
if (backends.includes('node-webgpu')) {
  console.log('== node-webgpu (onnxruntime-web WebGPU EP in Node, on Dawn)');
  const { benchNodeWebGpu, nodeWebGpuMarkdown } = await import('./node-webgpu');
  const r = await benchNodeWebGpu({
    target: 'public/models/austen-target',
    draft: 'public/models/austen-draft',
    prompts: allPrompts,
    log: (l) => console.log(`  ${l}`),
  });
  reports['node-webgpu'] = r as never;
  if ('error' in r) console.log(`\nnode-webgpu: ${r.error}\n`);
  else {
    tables.push(nodeWebGpuMarkdown(r));
    console.log(`\n${tables[tables.length - 1]}\n`);
  }
}

const browserBackends = backends.filter((b) => b.startsWith('chromium-'));
if (browserBackends.length > 0) {
  const { runBrowserBenches } = await import('./browser-driver');
  const browser = await runBrowserBenches(browserBackends, allPrompts);
  for (const [name, r] of Object.entries(browser.reports)) {
    reports[name] = r;
    if ('cells' in r) {
      tables.push(markdown(name.replace('chromium-', 'Chromium ').replace('webgpu', 'WebGPU'), r));
      console.log(`\n${tables[tables.length - 1]}\n`);
    } else console.log(`\n${name}: ${r.error}\n`);
  }
  if (browser.peer) {
    reports.peer = browser.peer as never;
    if ('markdown' in browser.peer) {
      tables.push(browser.peer.markdown);
      console.log(`\n${browser.peer.markdown}\n`);
    } else console.log(`\npeer: ${browser.peer.error}\n`);
  }
}

const versions = {
  node: process.version,
  onnxruntimeWeb: JSON.parse(readFileSync('node_modules/onnxruntime-web/package.json', 'utf8')).version,
  transformers: JSON.parse(readFileSync('node_modules/@huggingface/transformers/package.json', 'utf8')).version,
  chromium: (() => {
    try {
      return execFileSync('/usr/bin/chromium', ['--version'], { encoding: 'utf8' }).trim();
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
const file = `bench/results/${date.slice(0, 10)}-${machine.cpus}cpu.json`;
writeFileSync(file, `${JSON.stringify({ date, machine, versions, reports }, null, 1)}\n`);
writeFileSync(
  'bench/results/latest.md',
  `${tables.join('\n\n')}\n\nMachine: ${machine.cpus} x ${machine.cpuModel}, ${machine.memoryGiB} GiB; ${JSON.stringify(versions)}; ${date}\n`,
);
console.log(`wrote ${file} and bench/results/latest.md`);
