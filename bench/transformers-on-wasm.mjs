/**
 * Node --import preload for the peer benchmark. transformers.js requires onnxruntime-node in Node (native CPU
 * kernels: not the backend we compare on); this makes that require return onnxruntime-web (the very module our
 * engine imports), so transformers.js runs on the same wasm EP. onnxruntime-web registers its wasm backend under
 * the name 'cpu' too, which is the device transformers.js picks in Node.
 *
 *   node --import ./bench/transformers-on-wasm.mjs --import tsx bench/real-shapes.ts --peer
 */
import Module from 'node:module';

const ortWeb = await import('onnxruntime-web');
// transformers.js points onnxruntime-web's wasmPaths at a CDN when it loads (nothing here can reach one, and the
// setting is shared with our engine): keep the runtime loading its own files from node_modules.
Object.defineProperty(ortWeb.env.wasm, 'wasmPaths', { get: () => undefined, set: () => {}, configurable: false });
const load = Module._load;
Module._load = function loadWithOrtWeb(request, parent, isMain) {
  if (request === 'onnxruntime-node') return ortWeb;
  return load.call(this, request, parent, isMain);
};
