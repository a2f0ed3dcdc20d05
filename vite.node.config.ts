/**
 * The library build for Node: `dist/node/index.js`, an ES module of the engine and the model layer (src/node.ts),
 * with its dependencies (onnxruntime-web, @huggingface/transformers) left as imports. No DOM anywhere.
 */
import { join } from 'node:path';
import { defineConfig } from 'vite';

export default defineConfig({
  build: {
    target: 'node20',
    ssr: join(import.meta.dirname, 'src', 'node.ts'),
    outDir: join(import.meta.dirname, 'dist', 'node'),
    emptyOutDir: true,
    rollupOptions: { output: { entryFileNames: 'index.js', format: 'es' } },
  },
  publicDir: false,
});
