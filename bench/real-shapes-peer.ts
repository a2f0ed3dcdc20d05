/**
 * The peer on a real shape, in Node on the same backend as ours: transformers.js generate() (greedy) on our export
 * of the model (exported with the same weights, precision and graph variant), running on onnxruntime-web's wasm EP,
 * against our plain decoding on the same prompts, interleaved. End-to-end tokens/s, prefill included, for both.
 * transformers.js imports onnxruntime-node in Node (native kernels: not the same backend); the process must start
 * with bench/transformers-on-wasm.mjs, which resolves that import to onnxruntime-web. The run checks it did.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createDrafter } from '../src/engine/drafters/index';
import { generate } from '../src/engine/generate';
import { GREEDY } from '../src/engine/sampling';
import type { GraphVariant } from '../src/model/graph/llama';
import { loadModel } from '../src/model/load';
import { ModelRunner } from '../src/model/runner';
import { ortForNode } from '../src/runtime/ort-node';
import { exportForTransformers } from './export-peer';

export interface PeerOptions {
  precision: 'fp32' | 'int4' | 'int8';
  /** The graph both run: ours is built with it, transformers.js gets it exported. */
  graph: GraphVariant;
  prompts: string[];
  tokens: number;
  /** Where the export for transformers.js is written. */
  workDir: string;
  log?: (line: string) => void;
}

export interface PeerResult {
  precision: string;
  graph: GraphVariant;
  transformers: number;
  ours: number;
  ratio: number;
  sameTokens: number;
  prompts: number;
  versions: string;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : ((s[(s.length - 1) >> 1] as number) + (s[s.length >> 1] as number)) / 2;
};

export async function peerOnShape(modelDir: string, o: PeerOptions): Promise<PeerResult> {
  const log = o.log ?? (() => {});
  const ort = ortForNode();
  const name = `${o.precision}-${o.graph}`;
  await exportForTransformers(modelDir, join(o.workDir, name), {
    weights: o.precision === 'fp32' ? 'float' : o.precision,
    variant: o.graph,
  });
  const { AutoModelForCausalLM, AutoTokenizer, env } = await import('@huggingface/transformers');
  // transformers.js copies the runtime's env into env.backends.onnx: the same wasm settings object means the same runtime.
  if ((env.backends.onnx as { wasm?: unknown }).wasm !== ort.env.wasm) {
    throw new Error(
      'transformers.js is not running on onnxruntime-web here: start node with --import ./bench/transformers-on-wasm.mjs',
    );
  }
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  // No CDN copy of onnxruntime's wasm: the runtime loads its own files, as it does for our engine.
  env.useWasmCache = false;
  env.localModelPath = `${o.workDir}/`;
  const tokenizer = await AutoTokenizer.from_pretrained(name);
  // In Node transformers.js leaves external data to the runtime to read from disk, which onnxruntime-web cannot:
  // hand it the bytes, as it does itself in a browser.
  const data = new Uint8Array(readFileSync(join(o.workDir, name, 'onnx', 'model.onnx_data')));
  const theirs = await AutoModelForCausalLM.from_pretrained(name, {
    dtype: 'fp32',
    session_options: { externalData: [{ path: 'model.onnx_data', data }] },
  });
  const model = await loadModel(modelDir);
  const runner = await ModelRunner.create(ort, model, { device: 'wasm', precision: o.precision, graph: o.graph });
  const rows: { theirs: number; ours: number; same: boolean }[] = [];
  for (const [p, prompt] of o.prompts.entries()) {
    const ids = model.tokenizer.encode(prompt);
    const got: { theirs?: { tps: number; tokens: number[] }; ours?: { tps: number; tokens: number[] } } = {};
    for (const who of p % 2 === 0 ? ['theirs', 'ours'] : ['ours', 'theirs']) {
      const t = performance.now();
      if (who === 'theirs') {
        const out = (await theirs.generate({
          ...tokenizer(prompt),
          max_new_tokens: o.tokens,
          min_new_tokens: o.tokens,
          do_sample: false,
        })) as { tolist(): bigint[][] };
        const tokens = (out.tolist()[0] ?? []).slice(ids.length).map(Number);
        got.theirs = { tps: (1000 * tokens.length) / (performance.now() - t), tokens };
      } else {
        const it = generate(
          {
            target: runner,
            drafter: createDrafter('ar', { target: runner, costs: () => null }),
            tokenizer: model.tokenizer,
          },
          ids,
          {
            maxNewTokens: o.tokens,
            sampling: GREEDY,
            stopAtEos: false,
          },
        );
        let step = await it.next();
        while (!step.done) step = await it.next();
        got.ours = { tps: (1000 * step.value.tokens.length) / (performance.now() - t), tokens: step.value.tokens };
      }
    }
    rows.push({
      theirs: got.theirs?.tps ?? 0,
      ours: got.ours?.tps ?? 0,
      same: JSON.stringify(got.theirs?.tokens) === JSON.stringify(got.ours?.tokens),
    });
    log(
      `peer ${name} prompt ${p + 1}: transformers.js ${got.theirs?.tps.toFixed(2)} tok/s, ours ${got.ours?.tps.toFixed(2)}`,
    );
  }
  await runner.release();
  await theirs.dispose();
  const t = median(rows.map((r) => r.theirs));
  const u = median(rows.map((r) => r.ours));
  return {
    precision: runner.precision,
    graph: o.graph,
    transformers: t,
    ours: u,
    ratio: u / t,
    sameTokens: rows.filter((r) => r.same).length,
    prompts: rows.length,
    versions: `transformers.js ${env.version}, onnxruntime-web ${ort.env.versions.web}`,
  };
}
