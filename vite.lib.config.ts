/**
 * The library build: `dist/lib/spec-decoder.js` (ES module: the <spec-decoder> element, registered on import, and
 * EngineClient), its worker chunk, onnxruntime-web's wasm files under `dist/lib/ort/`, and type declarations
 * under `dist/lib/types/` (tsc -p tsconfig.lib.json). Host pages serve the folder and point `ort-base` at ort/.
 */
import { join } from 'node:path';
import { defineConfig } from 'vite';
import app from './vite.config';

export default defineConfig({
  ...app,
  build: {
    target: 'es2022',
    outDir: join(import.meta.dirname, 'dist', 'lib'),
    emptyOutDir: true,
    chunkSizeWarningLimit: 2048,
    lib: { entry: join(import.meta.dirname, 'src', 'index.ts'), formats: ['es'], fileName: () => 'spec-decoder.js' },
  },
  publicDir: false,
});
