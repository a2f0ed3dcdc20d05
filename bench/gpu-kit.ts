/**
 * The GPU kit's entry point (bundled for Node by tools/gpu-kit/build.mjs, run by tools/gpu-kit/run.sh; it also runs
 * with tsx): the benchmark's node-webgpu backend on the bundled pair, plus the verify-cost curves (fp32 vs fp16) of
 * the model folders given with --models. Writes bench/results/<date>T<hhmm>-<gpu>.json and .md (UTC start time), from the repository root.
 *
 *   node gpu-kit.mjs [--models DIR,DIR] [--plan smoke|software|gpu] [--out bench/results]
 *                    [--curves fp32/plain,int4/fused,...] [--feeds-ab] [bench flags]
 *
 * --curves: the precisions and graph variants whose verify-cost curves to measure on each model (default: fp32, and
 * fp16 where the adapter has shader-f16, each with the graph the engine picks).
 * --feeds-ab: also measure the target's call with its inputs in GPU buffers against CPU inputs, in this process
 * (bench/feeds-ab.ts).
 *
 * Bench flags (--methods, --categories, --prompts, --repeats, --max-new-tokens, --temperature...) size the harness
 * run as in `npm run bench`. The report is rewritten after each phase (harness, each curve, each exact check).
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_HEADS } from '../src/cli/args';
import {
  benchNodeWebGpu,
  type CurveVariant,
  NODE_WEBGPU_PLANS,
  type NodeWebGpuReport,
  nodeWebGpuMarkdown,
  type PlanName,
  parseCurveVariants,
} from './node-webgpu';
import { type BenchCli, parseBenchArgs } from './options';
import { traceWriter } from './trace';

const KIT_FLAGS = new Set(['--models', '--plan', '--out', '--curves', '--feeds-ab']);
/** The kit's own flags; the rest are the bench's (--methods, --categories, --prompts, --repeats, --max-new-tokens...). */
const kitArgs: string[] = [];
const benchArgs: string[] = [];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i] as string;
  const flag = a.split('=')[0] as string;
  const target = KIT_FLAGS.has(flag) ? kitArgs : benchArgs;
  target.push(a);
  if (flag === '--feeds-ab') continue; // takes no value
  if (!a.includes('=') && i + 1 < argv.length && !(argv[i + 1] as string).startsWith('--'))
    target.push(argv[++i] as string);
}
const { values } = parseArgs({
  args: kitArgs,
  options: {
    models: { type: 'string', default: '' },
    plan: { type: 'string' },
    out: { type: 'string', default: 'bench/results' },
    curves: { type: 'string' },
    'feeds-ab': { type: 'boolean', default: false },
  },
});
let curveVariants: CurveVariant[] | undefined;
try {
  curveVariants = values.curves ? parseCurveVariants(values.curves) : undefined;
} catch (e) {
  console.error(`error: --curves: ${(e as Error).message}`);
  process.exit(2);
}
const plan = values.plan;
if (plan !== undefined && !(plan in NODE_WEBGPU_PLANS)) {
  console.error(`error: --plan must be one of ${Object.keys(NODE_WEBGPU_PLANS).join(', ')}; got "${plan}"`);
  process.exit(2);
}

const prompts = (
  JSON.parse(readFileSync('bench/prompts.json', 'utf8')) as { prompts: { kind: string; text: string }[] }
).prompts.map(({ kind, text }) => ({ kind, text }));
let cli: BenchCli | undefined;
if (benchArgs.length > 0) {
  try {
    cli = parseBenchArgs(benchArgs, {}, [...new Set(prompts.map((p) => p.kind))]);
  } catch (e) {
    console.error(`error: ${(e as Error).message}`);
    process.exit(2);
  }
}
const trace = cli?.trace ? traceWriter(cli.trace) : null;
const started = new Date();
const { env: ortEnv } = await import('onnxruntime-web/webgpu');
const machine = {
  cpus: cpus().length,
  cpuModel: cpus()[0]?.model ?? 'unknown',
  memoryGiB: Math.round(totalmem() / 2 ** 30),
  node: process.version,
  onnxruntimeWeb: ortEnv.versions.web,
  env: Object.fromEntries(
    ['VK_DRIVER_FILES', 'WEBGPU_ADAPTER', 'SPEC_DECODER_WASM_TIERUP'].map((k) => [k, process.env[k] ?? null]),
  ),
  args: argv,
};
// Checked before anything runs, each in one line: a run that cannot write its results, or has no models to run.
try {
  mkdirSync(values.out as string, { recursive: true });
  const probe = join(values.out as string, `.write-check-${process.pid}`);
  writeFileSync(probe, '');
  rmSync(probe);
} catch (e) {
  console.error(`error: cannot write the results to ${values.out}: ${(e as Error).message}`);
  process.exit(1);
}
for (const folder of ['public/models/austen-target', 'public/models/austen-draft']) {
  if (!existsSync(join(folder, 'config.json'))) {
    console.error(
      `error: the bundled models are missing (${folder}/config.json): carry gpu-kit/models.tar.xz with the kit (node tools/gpu-kit/build.mjs makes it; tools/gpu-kit/run.sh unpacks it)`,
    );
    process.exit(1);
  }
}
let base = '';
/** Writes the report so far (after each phase: a run cut short keeps what it measured). */
function write(report: NodeWebGpuReport, complete: boolean): string {
  const gpu =
    (report.adapter.description || `${report.adapter.vendor} ${report.adapter.architecture}`)
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '')
      .slice(0, 48) || 'unknown-gpu';
  // The start time to the minute: a second run on the same GPU the same day wrote over the first one's files.
  base = join(values.out as string, `${started.toISOString().slice(0, 16).replace(':', '')}-${gpu}`);
  const md = nodeWebGpuMarkdown(report);
  const json = { date: started.toISOString(), complete, machine: { ...machine, webgpu: report.webgpuPackage }, report };
  writeFileSync(`${base}.json`, `${JSON.stringify(json, null, 1)}\n`);
  const status = complete ? '' : ' (partial: the run had not finished when this was written)';
  writeFileSync(`${base}.md`, `${md}\n\nMachine: ${JSON.stringify(json.machine)}; ${started.toISOString()}${status}\n`);
  return md;
}
const report = await benchNodeWebGpu({
  target: 'public/models/austen-target',
  draft: 'public/models/austen-draft',
  // The heads methods (and auto's EAGLE arm) where their folders travelled with the tree; skipped where not.
  heads: DEFAULT_HEADS,
  prompts,
  curveModels: String(values.models).split(',').filter(Boolean),
  ...(plan ? { plan: plan as PlanName } : {}),
  ...(cli ? { cli } : {}),
  ...(curveVariants ? { curveVariants } : {}),
  ...(values['feeds-ab'] ? { feedsAB: true } : {}),
  ...(trace ? { onRound: trace.rounds('node-webgpu') } : {}),
  log: (line) => console.log(`  ${line}`),
  progress: (partial) => {
    trace?.flush();
    write(partial, false);
  },
});
trace?.flush();
if ('error' in report) {
  console.error(`error: ${report.error}`);
  process.exit(1);
}
const md = write(report, true);
console.log(`\n${md}\n\nwrote ${base}.json and ${base}.md`);
// SPEC_DECODER_WASM_TIERUP=1 keeps the process alive until V8's background compiles end: leave now.
process.exit(0);
