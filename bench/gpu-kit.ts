/**
 * The GPU kit's entry point (bundled for Node by tools/gpu-kit/build.mjs, run by tools/gpu-kit/run.sh; it also runs
 * with tsx): the benchmark's node-webgpu backend on the bundled pair, plus the verify-cost curves (fp32 vs fp16) of
 * the model folders given with --models. Writes bench/results/<date>-<gpu>.json and .md, from the repository root.
 *
 *   node gpu-kit.mjs [--models DIR,DIR] [--plan smoke|software|gpu] [--out bench/results]
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { benchNodeWebGpu, NODE_WEBGPU_PLANS, nodeWebGpuMarkdown, type PlanName } from './node-webgpu';

const { values } = parseArgs({
  options: {
    models: { type: 'string', default: '' },
    plan: { type: 'string' },
    out: { type: 'string', default: 'bench/results' },
  },
});
const plan = values.plan;
if (plan !== undefined && !(plan in NODE_WEBGPU_PLANS)) {
  console.error(`error: --plan must be one of ${Object.keys(NODE_WEBGPU_PLANS).join(', ')}; got "${plan}"`);
  process.exit(2);
}

const prompts = (
  JSON.parse(readFileSync('bench/prompts.json', 'utf8')) as { prompts: { kind: string; text: string }[] }
).prompts.map(({ kind, text }) => ({ kind, text }));
const started = new Date();
const report = await benchNodeWebGpu({
  target: 'public/models/austen-target',
  draft: 'public/models/austen-draft',
  prompts,
  curveModels: String(values.models).split(',').filter(Boolean),
  ...(plan ? { plan: plan as PlanName } : {}),
  log: (line) => console.log(`  ${line}`),
});
if ('error' in report) {
  console.error(`error: ${report.error}`);
  process.exit(1);
}

const { env: ortEnv } = await import('onnxruntime-web/webgpu');
const gpu =
  (report.adapter.description || `${report.adapter.vendor} ${report.adapter.architecture}`)
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')
    .slice(0, 48) || 'unknown-gpu';
const machine = {
  cpus: cpus().length,
  cpuModel: cpus()[0]?.model ?? 'unknown',
  memoryGiB: Math.round(totalmem() / 2 ** 30),
  node: process.version,
  onnxruntimeWeb: ortEnv.versions.web,
  webgpu: report.webgpuPackage,
  env: Object.fromEntries(
    ['VK_DRIVER_FILES', 'WEBGPU_ADAPTER', 'SPEC_DECODER_WASM_TIERUP'].map((k) => [k, process.env[k] ?? null]),
  ),
};
const md = nodeWebGpuMarkdown(report);
const base = join(values.out as string, `${started.toISOString().slice(0, 10)}-${gpu}`);
mkdirSync(values.out as string, { recursive: true });
writeFileSync(`${base}.json`, `${JSON.stringify({ date: started.toISOString(), machine, report }, null, 1)}\n`);
writeFileSync(`${base}.md`, `${md}\n\nMachine: ${JSON.stringify(machine)}; ${started.toISOString()}\n`);
console.log(`\n${md}\n\nwrote ${base}.json and ${base}.md`);
// SPEC_DECODER_WASM_TIERUP=1 keeps the process alive until V8's background compiles end: leave now.
process.exit(0);
