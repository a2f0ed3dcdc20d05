/**
 * Which functions of onnxruntime's wasm inference spends its time in, for the CLI's compilation hints
 * (src/runtime/wasm-hints.ts): writes src/runtime/ort-hot-functions.json. Run it again after upgrading
 * onnxruntime-web (a test checks that the list belongs to the installed wasm):
 *
 *   node --import tsx tools/wasm-hot-functions.ts [--coverage 0.995] [--budget 64] [--threads 1,2] [--tokens 48]
 *
 * For each thread count, a fresh process loads the bundled target with every method's models (as the benchmark
 * does), generates once per method untimed (calibration, first-call work), then runs V8's sampling profiler over
 * two prompts per method (Liftoff only, so that every function is sampled as itself, without inlining). Each
 * process's shares of the wasm time are summed. Compiling a function with TurboFan up front costs time during the
 * load (about 2-3 ms per KB of body on our 2-core machine: one 490 KB function that holds 0.01% of the time took 0.9
 * s), so functions are taken by share of time per byte of body, until they hold `coverage` of the wasm time or
 * their bodies reach `budget` KB. Indices are listed as V8 counts them (imports included).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ORT_WASM, ortWasmPath } from '../src/runtime/ort-node';
import { wasmLayout } from '../src/runtime/wasm-hints';

const OUT = 'src/runtime/ort-hot-functions.json';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string };
}

/** One profiling process: samples per wasm function index. */
async function child(threads: number, tokens: number): Promise<Record<number, number>> {
  const [{ avoidTierUpStall }, { nodeWasmEngines }, { METHODS }, { GREEDY }] = await Promise.all([
    import('../src/runtime/v8-tiering'),
    import('../bench/heads-engines'),
    import('../src/engine/drafters/index'),
    import('../src/engine/sampling'),
  ]);
  avoidTierUpStall(false);
  const methods = METHODS.map((m) => m.name).filter((m) => m !== 'auto');
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const { engineFor, release } = await nodeWasmEngines(methods, threads, log);
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
      threads: { type: 'string', default: '1,2' },
      tokens: { type: 'string', default: '48' },
    },
  });
  const tokens = Number(values.tokens);
  if (values.child) {
    process.stdout.write(`${JSON.stringify(await child(Number(values.child), tokens))}\n`);
    process.exit(0);
  }
  const total = new Map<number, number>();
  for (const threads of values.threads.split(',').map(Number)) {
    console.log(`profiling on ${threads} wasm thread(s)...`);
    const out = execFileSync(
      process.execPath,
      ['--import', 'tsx', 'tools/wasm-hot-functions.ts', '--child', String(threads), '--tokens', String(tokens)],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const samples = JSON.parse(out.trim().split('\n').at(-1) as string) as Record<string, number>;
    const sum = Object.values(samples).reduce((a, b) => a + b, 0);
    // Each process weighs the same, whatever its sample count.
    for (const [f, n] of Object.entries(samples)) total.set(Number(f), (total.get(Number(f)) ?? 0) + n / sum);
  }
  const wasm = readFileSync(ortWasmPath());
  const layout = wasmLayout(wasm);
  const bodyBytes = (f: number) => layout.bodySizes[f - layout.importedFunctions] ?? Number.POSITIVE_INFINITY;
  const all = [...total.values()].reduce((a, b) => a + b, 0);
  const ranked = [...total].sort((a, b) => b[1] / bodyBytes(b[0]) - a[1] / bodyBytes(a[0]));
  const coverage = Number(values.coverage);
  const budget = Number(values.budget) * 1024;
  const functions: number[] = [];
  let covered = 0;
  let bytes = 0;
  for (const [f, share] of ranked) {
    if (covered >= coverage * all || bytes + bodyBytes(f) > budget) break;
    functions.push(f);
    covered += share;
    bytes += bodyBytes(f);
  }
  const version = (
    JSON.parse(readFileSync(join(ortWasmPath(), '..', '..', 'package.json'), 'utf8')) as { version: string }
  ).version;
  const record = {
    about: `Functions of onnxruntime-web's wasm that hold ${((100 * covered) / all).toFixed(1)}% of inference's wasm time (${ranked.length} functions sampled) in ${(bytes / 1024).toFixed(0)} KB of code, compiled with TurboFan up front by the CLI (src/runtime/wasm-hints.ts). Written by tools/wasm-hot-functions.ts; run it again when onnxruntime-web changes.`,
    onnxruntimeWeb: version,
    wasm: ORT_WASM,
    bytes: wasm.length,
    sha256: createHash('sha256').update(wasm).digest('hex'),
    measured: { v8: process.versions.v8, threads: values.threads, tokens, coverage, budgetKB: Number(values.budget) },
    functions: functions.sort((a, b) => a - b),
  };
  writeFileSync(OUT, `${JSON.stringify(record, null, 1)}\n`);
  console.log(
    `${OUT}: ${functions.length} functions of ${ranked.length} sampled, ${(bytes / 1024).toFixed(0)} KB, hold ${((100 * covered) / all).toFixed(2)}% of the wasm time`,
  );
}

await main();
