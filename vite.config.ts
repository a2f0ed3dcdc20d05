import { createReadStream, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultClientConditions, defineConfig, type Plugin } from 'vite';

const root = dirname(fileURLToPath(import.meta.url));
const ortDist = join(root, 'node_modules', 'onnxruntime-web', 'dist');

/**
 * onnxruntime-web's wasm binaries, served from our own origin under `ort/` (never a CDN): the dev server streams
 * them from node_modules, the build copies them into dist/ort/. Only the asyncify build is needed: it is the one
 * `onnxruntime-web/webgpu` loads, and it also runs the wasm EP. Beside it, onnxruntime-web's own browser module: the
 * wasm thread probe's workers import it (src/runtime/thread-probe-web.ts, ORT_PROBE_MODULE).
 */
export const ORT_FILES = [
  'ort-wasm-simd-threaded.asyncify.mjs',
  'ort-wasm-simd-threaded.asyncify.wasm',
  'ort.webgpu.min.mjs',
];

function ortWasmFiles(): Plugin {
  const types: Record<string, string> = { '.mjs': 'text/javascript', '.wasm': 'application/wasm' };
  return {
    name: 'ort-wasm-files',
    configureServer(server) {
      server.middlewares.use((req, res, next) => {
        const match = /\/ort\/([^?]+)/.exec(req.url ?? '');
        const file = match?.[1];
        if (!file || !ORT_FILES.includes(file)) return next();
        const path = join(ortDist, file);
        res.setHeader('Content-Type', types[file.slice(file.lastIndexOf('.'))] ?? 'application/octet-stream');
        res.setHeader('Content-Length', statSync(path).size);
        createReadStream(path).pipe(res);
      });
    },
    generateBundle() {
      for (const file of ORT_FILES) {
        this.emitFile({ type: 'asset', fileName: `ort/${file}`, source: readFileSync(join(ortDist, file)) });
      }
    },
  };
}

/** Cross-origin isolation, so wasm threads and SharedArrayBuffer are available. */
const isolation = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
};

export default defineConfig({
  base: './',
  // A multi-page static site: unknown paths are 404s (no index.html fallback), as on any static file server.
  appType: 'mpa',
  plugins: [ortWasmFiles()],
  server: { host: '127.0.0.1', headers: isolation },
  preview: { host: '127.0.0.1', headers: isolation },
  worker: { format: 'es' },
  // onnxruntime-web's non-bundled build: it loads its glue and wasm from wasmPaths (our ort/ folder) only. The
  // bundled build also references the 27 MB wasm as an asset, which would be emitted twice (and inlined in
  // library mode).
  resolve: { conditions: ['onnxruntime-web-use-extern-wasm', ...defaultClientConditions] },
  optimizeDeps: { exclude: ['onnxruntime-web'] },
  build: {
    target: 'es2022',
    chunkSizeWarningLimit: 2048,
    rollupOptions: {
      input: { main: join(root, 'index.html'), embed: join(root, 'embed.html'), bench: join(root, 'bench.html') },
    },
  },
});
