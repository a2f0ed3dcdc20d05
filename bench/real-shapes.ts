/**
 * `npm run bench:real-shapes`: the cost of real model shapes (random weights in the exact published shapes, written
 * by tools/real-shapes.ts): per shape and backend, the verify-cost curve T(q)/T(1) and plain decoding tokens/s for
 * each precision x graph variant, and optionally the transformers.js peer. Prints markdown and writes
 * bench/results/real-shapes-<date>T<hhmm>-<cpus>cpu.json, and the tables to real-shapes-latest.md; a run that measures
 * less than the default (fewer shapes, precisions, graphs, widths or repeats) writes "-partial" results and
 * real-shapes-partial.md instead, so that it never replaces the full run the README quotes.
 *
 *   --shapes SmolLM2-135M,SmolLM2-360M (or none: --shapes '')   --models public/models/austen-target (any folder)
 *   --backends node-wasm,chromium-webgpu,chromium-wasm
 *   --precisions fp32,int8,int4   --graphs plain,fused   --qs 1,2,4,8,16,32,64 (or 1-64)   --reps 3
 *   --tokens 32 --repeats 2   --layers N (keep N layers; all backends)   --gpu-layers 2 (default for the software
 *   WebGPU backends: Chromium's SwiftShader, lavapipe in Node)   --backends also takes node-webgpu (Dawn in Node)
 *   --peer (transformers.js generate() vs ours, Node wasm)   --peer-prompts 3
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { parseArgs } from 'node:util';
import { GRAPH_VARIANTS, type GraphVariant } from '../src/model/graph/llama';
import { PRECISIONS, type Precision } from '../src/model/precision';
import { ortForNode } from '../src/runtime/ort-node';
import { DEFAULT_ROOT, ensureRealShape, REAL_SHAPES, type RealShapeName, shapeFolderName } from '../tools/real-shapes';
import prompts from './prompts.json';
import { benchShape, type CellSpec, realShapesPartial, type ShapeReport, shapeMarkdown } from './real-shapes-core';
import { type PeerResult, peerOnShape } from './real-shapes-peer';

const OPTIONS = {
  shapes: { type: 'string', default: 'SmolLM2-135M' },
  models: { type: 'string', default: '' },
  backends: { type: 'string', default: 'node-wasm' },
  precisions: { type: 'string', default: 'fp32,int8,int4' },
  graphs: { type: 'string', default: 'plain,fused' },
  qs: { type: 'string', default: '1,2,4,8,16,32,64' },
  reps: { type: 'string', default: '3' },
  tokens: { type: 'string', default: '32' },
  repeats: { type: 'string', default: '2' },
  layers: { type: 'string' },
  'gpu-layers': { type: 'string', default: '2' },
  'browser-tokens': { type: 'string', default: '8' },
  'browser-qs': { type: 'string', default: '1,2,4,8,16' },
  peer: { type: 'boolean', default: false },
  'peer-prompts': { type: 'string', default: '3' },
  'peer-tokens': { type: 'string', default: '24' },
  threads: { type: 'string', default: '1' },
  help: { type: 'boolean', default: false },
} as const;
const BACKENDS = ['node-wasm', 'node-webgpu', 'chromium-webgpu', 'chromium-wasm'];

/** A bad flag or value: one line and exit status 2, as `npm run bench` does (they were stack traces). */
function usageError(message: string): never {
  console.error(`error: ${message} (see npm run bench:real-shapes -- --help)`);
  process.exit(2);
}
let values: ReturnType<typeof parseArgs<{ options: typeof OPTIONS }>>['values'];
try {
  ({ values } = parseArgs({ options: OPTIONS }));
} catch (e) {
  usageError((e as Error).message.split('\n')[0] ?? 'bad arguments');
}
if (values.help) {
  const source = readFileSync(new URL(import.meta.url), 'utf8');
  console.log(
    (/\/\*\*\n([\s\S]*?)\*\//.exec(source)?.[1] ?? '')
      .split('\n')
      .map((l) => l.replace(/^ \* ?/, ''))
      .join('\n')
      .trim(),
  );
  process.exit(0);
}
const partial = realShapesPartial(values, OPTIONS);

const list = (s: string | undefined) =>
  String(s ?? '')
    .split(',')
    .filter(Boolean);
function parseQs(s: string): number[] {
  const range = /^(\d+)-(\d+)$/.exec(s);
  if (range) return Array.from({ length: Number(range[2]) - Number(range[1]) + 1 }, (_, i) => Number(range[1]) + i);
  return list(s).map(Number);
}
const shapes = list(values.shapes) as RealShapeName[];
for (const s of shapes)
  if (!(s in REAL_SHAPES)) usageError(`--shapes: unknown shape "${s}" (use ${Object.keys(REAL_SHAPES).join(', ')})`);
for (const b of list(values.backends))
  if (!BACKENDS.includes(b)) usageError(`--backends: unknown backend "${b}" (use ${BACKENDS.join(', ')})`);
if (list(values.backends).length === 0) usageError('--backends needs at least one name');
for (const p of list(values.precisions))
  if (!(PRECISIONS as readonly string[]).includes(p))
    usageError(`--precisions: unknown precision "${p}" (use ${PRECISIONS.join(', ')})`);
for (const g of list(values.graphs))
  if (!(GRAPH_VARIANTS as readonly string[]).includes(g))
    usageError(`--graphs: unknown graph "${g}" (use ${GRAPH_VARIANTS.join(', ')})`);
const cells: CellSpec[] = list(values.precisions).flatMap((precision) =>
  list(values.graphs).map((graph) => ({ precision: precision as Precision, graph: graph as GraphVariant })),
);
const backends = list(values.backends);
const promptText = prompts.prompts[0]?.text ?? 'It is a truth universally acknowledged';
const reports: Record<string, ShapeReport | { error: string }> = {};
const peers: PeerResult[] = [];
const tables: string[] = [];
const log = (line: string) => console.log(`  ${line}`);

/** What to measure: generated real shapes, and any model folders given with --models (e.g. the bundled target). */
interface Target {
  label: string;
  /** Folder for Node (gpu: sized for a software WebGPU backend). */
  dir: (gpu: boolean) => string;
  /** URL path for the browser (the dev server serves public/ at / and the shape cache at /real-models/). */
  url: (browser: boolean) => string;
}
const layersFor = (gpu: boolean) => {
  const n = values.layers ?? (gpu ? values['gpu-layers'] : undefined);
  return n === undefined || Number(n) <= 0 ? {} : { layers: Number(n) };
};
const targets: Target[] = [
  ...shapes.map((shape) => ({
    label: shape,
    dir: (gpu: boolean) => ensureRealShape(shape, layersFor(gpu)),
    url: (browser: boolean) => {
      ensureRealShape(shape, layersFor(browser));
      return `/real-models/${shapeFolderName(shape, layersFor(browser))}/`;
    },
  })),
  ...list(values.models).map((folder) => ({
    label: folder,
    dir: () => folder,
    url: () => {
      if (!folder.startsWith('public/')) throw new Error(`--models ${folder}: the browser backends serve public/ only`);
      return `${folder.slice('public'.length)}/`;
    },
  })),
];

for (const target of targets) {
  if (backends.includes('node-wasm')) {
    const dir = target.dir(false);
    console.log(`== ${dir}, wasm in Node`);
    const r = await benchShape(ortForNode(Number(values.threads)), dir, 'wasm', cells, {
      qs: parseQs(String(values.qs)),
      reps: Number(values.reps),
      decodeTokens: Number(values.tokens),
      decodeRepeats: Number(values.repeats),
      prompt: promptText,
      log,
    });
    reports[`${dir}/node-wasm`] = r;
    tables.push(shapeMarkdown(`${dir.replace(/^.*\//, '')}, wasm in Node`, r));
    console.log(`\n${tables[tables.length - 1]}\n`);
    if (values.peer) {
      for (const cell of cells) {
        if (cell.precision !== 'fp32' && cell.precision !== 'int4' && cell.precision !== 'int8') continue;
        peers.push(
          await peerOnShape(dir, {
            precision: cell.precision,
            graph: cell.graph,
            prompts: prompts.prompts.slice(0, Number(values['peer-prompts'])).map((p) => p.text),
            tokens: Number(values['peer-tokens']),
            workDir: `${DEFAULT_ROOT}/peer-exports/${dir.replace(/^.*\//, '')}`,
            log,
          }),
        );
      }
    }
  }
}

// WebGPU in Node after every wasm run: installing Dawn leaves V8 running ORT's wasm with Liftoff only.
if (backends.includes('node-webgpu')) {
  const { ortForNodeWebGpu } = await import('../src/runtime/ort-node-webgpu');
  const gpu = await ortForNodeWebGpu();
  for (const target of targets) {
    const dir = target.dir(true);
    if (!gpu.ok) {
      reports[`${dir}/node-webgpu`] = { error: gpu.reason };
      console.log(`node-webgpu: ${gpu.reason}`);
      continue;
    }
    console.log(`== ${dir}, WebGPU in Node (${gpu.adapter.description || gpu.adapter.architecture})`);
    const r = await benchShape(gpu.ort as never, dir, 'webgpu', cells, {
      qs: parseQs(String(values['browser-qs'])),
      reps: Number(values.reps),
      decodeTokens: Number(values['browser-tokens']),
      decodeRepeats: Number(values.repeats),
      prompt: promptText,
      log,
    });
    reports[`${dir}/node-webgpu`] = r;
    tables.push(shapeMarkdown(`${dir.replace(/^.*\//, '')}, WebGPU in Node (${gpu.adapter.architecture})`, r));
    console.log(`\n${tables[tables.length - 1]}\n`);
  }
}

for (const target of targets) {
  const browserBackends = backends.filter((b) => b.startsWith('chromium-'));
  if (browserBackends.length > 0) {
    const url = target.url(true);
    const { runInChromium } = await import('./real-shapes-browser');
    console.log(`== ${url}, ${browserBackends.join(', ')}`);
    const results = await runInChromium(
      DEFAULT_ROOT,
      browserBackends.map((b) => ({
        model: url,
        device: b === 'chromium-webgpu' ? 'webgpu' : 'wasm',
        cells,
        options: {
          qs: parseQs(String(values['browser-qs'])),
          reps: Number(values.reps),
          decodeTokens: Number(values['browser-tokens']),
          decodeRepeats: Number(values.repeats),
          prompt: promptText,
        },
      })),
      log,
    );
    results.forEach((r, i) => {
      const b = browserBackends[i] as string;
      reports[`${url}/${b}`] = r;
      if ('cells' in r) {
        tables.push(
          shapeMarkdown(`${url.replace(/\/$/, '').replace(/^.*\//, '')}, ${b.replace('chromium-', 'Chromium ')}`, r),
        );
        console.log(`\n${tables[tables.length - 1]}\n`);
      } else console.log(`${url} ${b}: ${r.error}`);
    });
  }
}

if (peers.length > 0) {
  const rows = peers.map(
    (p) =>
      `| ${p.precision} | ${p.graph} | ${p.transformers.toFixed(2)} | ${p.ours.toFixed(2)} | ${p.ratio.toFixed(2)}x | ${p.sameTokens}/${p.prompts} |`,
  );
  tables.push(
    [
      '#### Peer: transformers.js generate() vs our plain decoding, wasm in Node (same export, same backend)',
      '',
      `${peers[0]?.versions}; end-to-end tokens/s (prefill included), median over prompts, interleaved`,
      '',
      '| precision | graph (both) | transformers.js tok/s | ours tok/s | ours / transformers.js | same greedy tokens |',
      '| --- | --- | --- | --- | --- | --- |',
      ...rows,
    ].join('\n'),
  );
  console.log(`\n${tables[tables.length - 1]}\n`);
}

const machine = {
  cpus: cpus().length,
  cpuModel: cpus()[0]?.model ?? 'unknown',
  memoryGiB: Math.round(totalmem() / 2 ** 30),
};
const date = new Date().toISOString();
mkdirSync('bench/results', { recursive: true });
const stamp = `${date.slice(0, 10)}T${date.slice(11, 13)}${date.slice(14, 16)}`;
const file = `bench/results/real-shapes-${stamp}-${machine.cpus}cpu${partial ? '-partial' : ''}.json`;
const markdown = `bench/results/real-shapes-${partial ? 'partial' : 'latest'}.md`;
writeFileSync(file, `${JSON.stringify({ date, machine, args: values, reports, peers }, null, 1)}\n`);
writeFileSync(
  markdown,
  `${tables.join('\n\n')}\n\nMachine: ${machine.cpus} x ${machine.cpuModel}, ${machine.memoryGiB} GiB; node ${process.version}; ${date}\n`,
);
console.log(`wrote ${file} and ${markdown}`);
