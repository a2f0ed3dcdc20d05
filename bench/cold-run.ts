/**
 * One fresh Node process of the cold benchmark (bench/cold.ts starts several): import the engine, load the bundled
 * pair as the CLI does (its remembered records in SPEC_DECODER_CACHE), generate one prompt three times, then
 * measure the steady state in the same process, and print one JSON line saying where the time went.
 *
 *   tsx bench/cold-run.ts <method> <max-new-tokens> [liftoff|keep-alive]
 *
 * The third argument says how onnxruntime's wasm is compiled (src/runtime/ort-node.ts): `liftoff` (only), as the
 * CLI does for up to 512 tokens; `keep-alive` (tier-up with an interval holding the event loop), as it does beyond;
 * V8's default tiering otherwise.
 */
import type { Method } from '../src/engine/drafters/index';

const booted = performance.now(); // milliseconds since this process started: Node, the TypeScript loader
const [{ SpecEngine }, { LIFTOFF_UP_TO, ortForNode, wasmTieringFor }, { FileStore }, { firstAndSteady }] =
  await Promise.all([
    import('../src/engine/engine'),
    import('../src/runtime/ort-node'),
    import('../src/runtime/store-node'),
    import('./cold-measure'),
  ]);
const imported = performance.now();

const method = (process.argv[2] ?? 'ar') as Method;
const maxNewTokens = Number(process.argv[3] ?? 64);
const tier = process.argv[4] === 'liftoff' || process.argv[4] === 'keep-alive' ? process.argv[4] : 'default';
// wasmTieringFor picks Liftoff only up to LIFTOFF_UP_TO tokens and the keep-alive beyond.
const stopTiering = tier === 'default' ? () => {} : wasmTieringFor(tier === 'liftoff' ? 1 : LIFTOFF_UP_TO + 1);
const PROMPT = 'It is a truth universally acknowledged, that a single man in possession of a good fortune';
const STEADY_RUNS = 8;

const engine = await SpecEngine.load(ortForNode(), {
  target: 'public/models/austen-target',
  draft: 'public/models/austen-draft',
  device: 'wasm',
  store: new FileStore(),
});

const measured = await firstAndSteady(engine, method, PROMPT, maxNewTokens, STEADY_RUNS);
await engine.release();
stopTiering();

console.log(
  JSON.stringify({
    method,
    tier,
    bootMs: booted,
    importMs: imported - booted,
    // Loading includes the engine's own warm-up; calibration happens inside the first generation of a method
    // that uses the cost model (engine.timings says how long, and whether the record was remembered).
    loadMs: engine.timings.loadMs,
    warmupMs: engine.timings.warmupMs,
    calibrationMs: engine.timings.calibrationMs,
    calibration: engine.timings.calibration,
    // generations, steadyMsPerToken, and firstResultMs: from process start to the end of the first generation,
    // what a one-shot CLI user waits.
    ...measured,
  }),
);
// A process that tiered up would wait for its background compiles at exit; the line above is all that was wanted.
process.exit(0);
