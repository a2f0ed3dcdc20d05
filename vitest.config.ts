import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'tools/**/*.test.ts', 'bench/**/*.test.ts'],
    environment: 'node',
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Vitest's default is one worker per core but one, i.e. a single worker on our 2-core machines; most test files
    // run onnxruntime on one wasm thread, so two files side by side use both cores (6.5 -> 4.7 min on this machine).
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
