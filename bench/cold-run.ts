/**
 * One fresh Node process of the cold benchmark (bench/cold.ts starts several): import the engine, load the bundled
 * pair as the CLI does (its remembered records in SPEC_DECODER_CACHE), generate one prompt three times, then
 * measure the steady state in the same process, and print one JSON line saying where the time went.
 *
 *   tsx bench/cold-run.ts <method> <max-new-tokens> [hinted|liftoff|keep-alive|default] [wasm threads, default 1]
 *
 * The third argument says how onnxruntime's wasm is compiled (src/runtime/ort-node.ts): `hinted` (its hot functions
 * with TurboFan up front, the rest Liftoff), as the CLI does where the hints apply; `liftoff` (only), as it does
 * otherwise for up to 512 tokens; `keep-alive` (tier-up with an interval holding the event loop), as it does beyond;
 * V8's default tiering otherwise.
 */
import type { Method } from '../src/engine/drafters/index';

const booted = performance.now(); // milliseconds since this process started: Node, the TypeScript loader
const [
  { SpecEngine },
  { hintedOrtWasm, LIFTOFF_UP_TO, ortForNode, wasmTieringFor },
  { FileStore },
  { firstAndSteady },
  { wasmCompileMode },
] = await Promise.all([
  import('../src/engine/engine'),
  import('../src/runtime/ort-node'),
  import('../src/runtime/store-node'),
  import('./cold-measure'),
  import('../src/runtime/v8-tiering'),
]);
const imported = performance.now();

const method = (process.argv[2] ?? 'ar') as Method;
const maxNewTokens = Number(process.argv[3] ?? 64);
const asked = process.argv[4];
const tier = asked === 'hinted' || asked === 'liftoff' || asked === 'keep-alive' ? asked : 'default';
// As the CLI chooses: hints where they apply; SPEC_DECODER_WASM_TIERUP=0 / 1 force Liftoff only / the keep-alive.
const stopTiering =
  tier === 'default'
    ? () => {}
    : wasmTieringFor(LIFTOFF_UP_TO, {
        SPEC_DECODER_WASM_TIERUP: { hinted: '', liftoff: '0', 'keep-alive': '1' }[tier],
      });
if (tier === 'hinted' && wasmCompileMode() !== 'hinted')
  throw new Error(`no compilation hints here: ${hintedOrtWasm().reason}`);
const PROMPT = 'It is a truth universally acknowledged, that a single man in possession of a good fortune';
const STEADY_RUNS = 8;

const engine = await SpecEngine.load(ortForNode(Number(process.argv[5] ?? 1)), {
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
