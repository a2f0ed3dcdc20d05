/**
 * One fresh Node process of the memory benchmark (bench/memory.ts starts one per method and device): load the engine
 * a method needs, as the benchmark does, generate, and print one JSON line with what the engine holds. A process
 * because onnxruntime's wasm heap never shrinks: what one engine grew it to would count against the next.
 *
 *   tsx bench/memory-run.ts <method> <wasm|webgpu>
 *
 * Measured without hooks in the product: the WebAssembly.Memory that onnxruntime's wasm creates (its heap: weights
 * on wasm, activations, the cache) is caught as it is made; on WebGPU, Dawn's GPUDevice.createBuffer and
 * GPUBuffer.destroy are wrapped to count the bytes of live GPU buffers (onnxruntime's pool included).
 */
import { DEFAULT_HEADS } from '../src/cli/args';
import type { Method } from '../src/engine/drafters/index';

const memories: WebAssembly.Memory[] = [];
const Memory = WebAssembly.Memory;
WebAssembly.Memory = new Proxy(Memory, {
  construct(target, args, newTarget) {
    const memory = Reflect.construct(target, args, newTarget) as WebAssembly.Memory;
    memories.push(memory);
    return memory;
  },
});
// A module that defines its own memory exports it instead.
const instantiate = WebAssembly.instantiate;
WebAssembly.instantiate = (async (...args: Parameters<typeof instantiate>) => {
  const r = (await instantiate(...args)) as WebAssembly.WebAssemblyInstantiatedSource | WebAssembly.Instance;
  const instance = 'instance' in r ? r.instance : r;
  for (const v of Object.values(instance.exports)) if (v instanceof Memory && !memories.includes(v)) memories.push(v);
  return r;
}) as typeof instantiate;

const method = (process.argv[2] ?? 'ar') as Method;
const device = process.argv[3] === 'webgpu' ? 'webgpu' : 'wasm';

const [{ SpecEngine }, { methodSpec, headsNeeded }, { FileStore }, { runOnce }] = await Promise.all([
  import('../src/engine/engine'),
  import('../src/engine/drafters/index'),
  import('../src/runtime/store-node'),
  import('./harness'),
]);

const gpu = { live: 0, peak: 0, sizes: new WeakMap<object, number>() };
let ort: Parameters<typeof SpecEngine.load>[0];
if (device === 'webgpu') {
  const { ortForNodeWebGpu } = await import('../src/runtime/ort-node-webgpu');
  const r = await ortForNodeWebGpu();
  if (!r.ok) {
    console.log(JSON.stringify({ method, device, error: r.reason }));
    process.exit(0);
  }
  ort = r.ort;
  const g = globalThis as unknown as { GPUDevice: typeof GPUDevice; GPUBuffer: typeof GPUBuffer };
  const create = g.GPUDevice.prototype.createBuffer;
  g.GPUDevice.prototype.createBuffer = function (this: GPUDevice, descriptor: GPUBufferDescriptor) {
    const buffer = create.call(this, descriptor);
    gpu.sizes.set(buffer, descriptor.size);
    gpu.live += descriptor.size;
    gpu.peak = Math.max(gpu.peak, gpu.live);
    return buffer;
  };
  const destroy = g.GPUBuffer.prototype.destroy;
  g.GPUBuffer.prototype.destroy = function (this: GPUBuffer) {
    gpu.live -= gpu.sizes.get(this) ?? 0;
    gpu.sizes.delete(this);
    return destroy.call(this);
  };
} else {
  const { ortForNode } = await import('../src/runtime/ort-node');
  ort = ortForNode();
}

/** The heap's size, and the 4 KiB pages of it ever written (resident: the heap never gives pages back). */
function heap(): { reservedBytes: number; touchedBytes: number } {
  let reservedBytes = 0;
  let touchedBytes = 0;
  for (const m of memories) {
    const words = new Uint32Array(m.buffer);
    reservedBytes += m.buffer.byteLength;
    for (let p = 0; p < words.length; p += 1024) {
      for (let j = p; j < p + 1024 && j < words.length; j++) {
        if (words[j] !== 0) {
          touchedBytes += 4096;
          break;
        }
      }
    }
  }
  return { reservedBytes, touchedBytes };
}

const spec = methodSpec(method);
const heads = headsNeeded(spec);
const engine = await SpecEngine.load(ort, {
  target: 'public/models/austen-target',
  device,
  ...(spec.needs.includes('draft-model') ? { draft: 'public/models/austen-draft' } : {}),
  ...(heads ? { heads: DEFAULT_HEADS[heads] } : {}),
  ...(spec.needs.includes('target-self') ? { layerSwitches: true } : {}),
  store: new FileStore(),
});
const loaded = { ...heap(), gpuBytes: gpu.live };
// Long enough for swift's search to run (it starts once 32 tokens exist) and for every method's widest calls.
const PROMPTS = [
  'It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife.',
  'Emma Woodhouse, handsome, clever, and rich, with a comfortable home and happy disposition, seemed to unite',
];
const tokens = device === 'webgpu' ? 24 : 64;
for (const prompt of PROMPTS) await runOnce(engine, method, prompt, tokens);
const generated = { ...heap(), gpuBytes: gpu.live, gpuPeakBytes: gpu.peak };
console.log(
  JSON.stringify({
    method,
    device,
    variant: engine.target.variant,
    loaded,
    generated,
    rssBytes: process.memoryUsage().rss,
  }),
);
process.exit(0);
