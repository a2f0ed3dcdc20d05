/**
 * Which functions of onnxruntime's wasm inference spends its time in, for the CLI's compilation hints
 * (src/runtime/wasm-hints.ts): writes src/runtime/ort-hot-functions.json. Run it again after upgrading
 * onnxruntime-web (a test checks that the list belongs to the installed wasm):
 *
 *   node --import tsx tools/wasm-hot-functions.ts [--coverage 0.995] [--budget 64] [--threads 1,2] [--tokens 48]
 *     [--precisions fp32,int8]
 *
 * For each thread count and precision, a fresh process loads the bundled target with every method's models in that
 * precision (as the benchmark does), generates once per method untimed (calibration, first-call work), then runs
 * V8's sampling profiler over two prompts per method (Liftoff only, so that every function is sampled as itself,
 * without inlining). Compiling a function with TurboFan up front costs time during the load (about 2-3 ms per KB of
 * body on our 2-core machine: one 490 KB function that holds 0.01% of the time took 0.9 s), so per precision
 * (its processes' shares of the wasm time summed, each process weighing the same) functions are taken by share of
 * time per byte of body, until they hold `coverage` of the wasm time or their bodies reach `budget` KB; the list is
 * the union over the precisions: int8 runs other kernels (MLAS's integer matmul, QuantizeLinear), and `auto` picks
 * int8 on wasm for hub models. Indices are listed as V8 counts them (imports included).
 *
 * The "warm" list beside it: every other function those processes ran at all, loading and generating (V8 traces each
 * function's compile, and Liftoff only compiles a function when it is first called), which the CLI compiles with
 * Liftoff up front, on V8's background threads while the models are read, instead of on first call, mostly on the
 * main thread during the load.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import v8 from 'node:v8';
import type { Precision } from '../src/model/precision';
import { ORT_WASM, ortWasmPath } from '../src/runtime/ort-node';
import { wasmLayout } from '../src/runtime/wasm-hints';

const OUT = 'src/runtime/ort-hot-functions.json';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string };
}

/** One profiling process: samples per wasm function index (the functions it compiled are traced to stdout). */
async function child(threads: number, tokens: number, precision: Precision): Promise<Record<number, number>> {
  v8.setFlagsFromString('--trace-wasm-compilation-times');
  const [{ avoidTierUpStall }, { nodeWasmEngines }, { METHODS }, { GREEDY }] = await Promise.all([
    import('../src/runtime/v8-tiering'),
    import('../bench/heads-engines'),
    import('../src/engine/drafters/index'),
    import('../src/engine/sampling'),
  ]);
  avoidTierUpStall(false);
  const methods = METHODS.map((m) => m.name).filter((m) => m !== 'auto');
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const { engineFor, release } = await nodeWasmEngines(methods, threads, log, precision);
  const prompts = (JSON.parse(readFileSync('bench/prompts.json', 'utf8')) as { prompts: { text: string }[] }).prompts;
  const run = async (method: (typeof methods)[number], prompt: string) => {
    const it = engineFor(method).generate(prompt, { method, maxNewTokens: tokens, sampling: GREEDY });
    while (!(await it.next()).done) {}
  };
  for (const m of methods) await run(m, prompts[0]?.text as string);
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 250 });
  await session.post('Profiler.start');
  for (const m of methods) for (const p of prompts.slice(1, 3)) await run(m, p.text);
  const { profile } = await session.post('Profiler.stop');
  await release();
  const byId = new Map((profile.nodes as ProfileNode[]).map((n) => [n.id, n]));
  const samples: Record<number, number> = {};
  for (const id of profile.samples ?? []) {
    const match = /^wasm-function\[(\d+)\]$/.exec(byId.get(id)?.callFrame.functionName ?? '');
    if (match) samples[Number(match[1])] = (samples[Number(match[1])] ?? 0) + 1;
  }
  return samples;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      child: { type: 'string' },
      coverage: { type: 'string', default: '0.995' },
      budget: { type: 'string', default: '64' },
      precisions: { type: 'string', default: 'fp32,int8' },
      precision: { type: 'string', default: 'fp32' },
      threads: { type: 'string', default: '1,2' },
      tokens: { type: 'string', default: '48' },
    },
  });
  const tokens = Number(values.tokens);
  if (values.child) {
    const samples = await child(Number(values.child), tokens, values.precision as Precision);
    process.stdout.write(`${JSON.stringify(samples)}\n`);
    process.exit(0);
  }
  // Per precision: each of its processes weighs the same, whatever its sample count.
  const totals = new Map<string, Map<number, number>>();
  const ran = new Set<number>();
  const runs = values.threads
    .split(',')
    .map(Number)
    .flatMap((threads) => values.precisions.split(',').map((precision) => ({ threads, precision })));
  for (const { threads, precision } of runs) {
    console.log(`profiling on ${threads} wasm thread(s), ${precision}...`);
    const out = execFileSync(
      process.execPath,
      [
        '--import',
        'tsx',
        'tools/wasm-hot-functions.ts',
        '--child',
        String(threads),
        '--precision',
        precision,
        '--tokens',
        String(tokens),
      ],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const lines = out.trim().split('\n');
    // Per wasm module (the trace names each function's module by address; Node runs small wasm modules of its own,
    // such as its HTTP parser): onnxruntime's is the one that compiled the most functions.
    const byModule = new Map<string, number[]>();
    for (const line of lines) {
      const compiled = /^Compiled function (0x[0-9a-f]+)#(\d+) using /.exec(line);
      if (!compiled) continue;
      const module = compiled[1] as string;
      const functions = byModule.get(module) ?? [];
      functions.push(Number(compiled[2]));
      byModule.set(module, functions);
    }
    const ort = [...byModule.values()].sort((a, b) => b.length - a.length)[0] ?? [];
    for (const f of ort) ran.add(f);
    const samples = JSON.parse(lines.at(-1) as string) as Record<string, number>;
    const sum = Object.values(samples).reduce((a, b) => a + b, 0);
    const total = totals.get(precision) ?? new Map<number, number>();
    for (const [f, n] of Object.entries(samples)) total.set(Number(f), (total.get(Number(f)) ?? 0) + n / sum);
    totals.set(precision, total);
  }
  const wasm = readFileSync(ortWasmPath());
  const layout = wasmLayout(wasm);
  const bodyBytes = (f: number) => layout.bodySizes[f - layout.importedFunctions] ?? Number.POSITIVE_INFINITY;
  const coverage = Number(values.coverage);
  const budget = Number(values.budget) * 1024;
  // Each precision's own selection (its budget, its coverage), then their union: a precision's hot set does not
  // push another's out (one shared ranking dropped 19 of fp32's functions for int8's, and fp32 through the CLI
  // slowed).
  const chosen = new Set<number>();
  const held: string[] = [];
  let sampled = 0;
  for (const [precision, total] of totals) {
    const all = [...total.values()].reduce((a, b) => a + b, 0);
    const ranked = [...total].sort((a, b) => b[1] / bodyBytes(b[0]) - a[1] / bodyBytes(a[0]));
    sampled = Math.max(sampled, ranked.length);
    let covered = 0;
    let bytes = 0;
    for (const [f, share] of ranked) {
      if (covered >= coverage * all || bytes + bodyBytes(f) > budget) break;
      chosen.add(f);
      covered += share;
      bytes += bodyBytes(f);
    }
    held.push(`${((100 * covered) / all).toFixed(1)}% of ${precision}'s`);
  }
  const functions = [...chosen];
  const bytes = functions.reduce((a, f) => a + bodyBytes(f), 0);
  const version = (
    JSON.parse(readFileSync(join(ortWasmPath(), '..', '..', 'package.json'), 'utf8')) as { version: string }
  ).version;
  const record = {
    about: `functions: those of onnxruntime-web's wasm that hold ${held.join(' and ')} inference wasm time (up to ${sampled} functions sampled per precision) in ${(bytes / 1024).toFixed(0)} KB of code, compiled with TurboFan up front by the CLI (src/runtime/wasm-hints.ts); warm: the others the same processes ran, loading and generating, compiled with Liftoff up front. Written by tools/wasm-hot-functions.ts; run it again when onnxruntime-web changes.`,
    onnxruntimeWeb: version,
    wasm: ORT_WASM,
    bytes: wasm.length,
    sha256: createHash('sha256').update(wasm).digest('hex'),
    measured: {
      v8: process.versions.v8,
      threads: values.threads,
      precisions: values.precisions,
      tokens,
      coverage,
      budgetKBPerPrecision: Number(values.budget),
    },
    functions: functions.sort((a, b) => a - b),
    warm: [...ran].filter((f) => !chosen.has(f)).sort((a, b) => a - b),
  };
  writeFileSync(OUT, `${JSON.stringify(record, null, 1)}\n`);
  // As the repository's formatter lays it out (`biome check` in the tests).
  execFileSync(join('node_modules', '.bin', 'biome'), ['format', '--write', OUT], { stdio: 'ignore' });
  const warmBytes = record.warm.reduce((a, f) => a + bodyBytes(f), 0);
  console.log(
    `${OUT}: ${functions.length} functions, ${(bytes / 1024).toFixed(0)} KB, hold ${held.join(' and ')} wasm time; ${record.warm.length} more run (${(warmBytes / 1024).toFixed(0)} KB)`,
  );
}

await main();
