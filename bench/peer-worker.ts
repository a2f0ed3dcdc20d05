/// <reference lib="webworker" />
/**
 * The peer comparison in a browser worker: transformers.js generate() (greedy) on our export of the target, and
 * our engine (plain decoding and the best method) on the same prompts, interleaved, on the same backend.
 */

import type { Method } from '../src/engine/drafters/index';
import { SpecEngine } from '../src/engine/engine';
import { GREEDY } from '../src/engine/sampling';
import { ortForWeb } from '../src/runtime/ort-web';

declare const self: DedicatedWorkerGlobalScope;

export interface PeerRequest {
  ortBase: string;
  base: string;
  device: 'wasm' | 'webgpu';
  prompts: string[];
  maxNewTokens: number;
  best: Method;
}

export interface PeerRow {
  prompt: number;
  /** End-to-end tokens/s (prefill included) of each. */
  transformers: number;
  ours: number;
  oursBest: number;
  /** transformers.js's greedy tokens equal ours. */
  same: boolean;
}

export type PeerMessage = { type: 'done'; rows: PeerRow[]; versions: string } | { type: 'error'; error: string };

self.onmessage = async (event: MessageEvent<PeerRequest>) => {
  const req = event.data;
  try {
    const ort = ortForWeb(req.ortBase);
    const { AutoModelForCausalLM, AutoTokenizer, env } = await import('@huggingface/transformers');
    const wasm = env.backends.onnx.wasm as { wasmPaths?: unknown };
    wasm.wasmPaths = req.ortBase;
    env.allowRemoteModels = false;
    env.allowLocalModels = true;
    env.localModelPath = new URL('peer-models/', req.base).pathname;
    const tokenizer = await AutoTokenizer.from_pretrained('austen-target');
    const model = await AutoModelForCausalLM.from_pretrained('austen-target', { dtype: 'fp32', device: req.device });
    const engine = await SpecEngine.load(ort, {
      target: 'models/austen-target/',
      draft: 'models/austen-draft/',
      device: req.device,
      base: req.base,
    });
    const ours = async (prompt: string, method: Method) => {
      const t = performance.now();
      const it = engine.generate(prompt, {
        method,
        maxNewTokens: req.maxNewTokens,
        sampling: GREEDY,
        stopAtEos: false,
      });
      let step = await it.next();
      while (!step.done) step = await it.next();
      return { tokens: step.value.tokens, tps: (1000 * step.value.tokens.length) / (performance.now() - t) };
    };
    const rows: PeerRow[] = [];
    for (let p = 0; p < req.prompts.length; p++) {
      const prompt = req.prompts[p] as string;
      const order = ['theirs', 'ar', 'best'].map((_, i, a) => a[(i + p) % a.length] as string);
      const got: Record<string, { tokens: number[]; tps: number }> = {};
      for (const who of order) {
        if (who === 'theirs') {
          const inputs = tokenizer(prompt);
          const t = performance.now();
          const out = (await model.generate({
            ...inputs,
            max_new_tokens: req.maxNewTokens,
            min_new_tokens: req.maxNewTokens,
            do_sample: false,
          })) as { tolist(): bigint[][] };
          const ms = performance.now() - t;
          const tokens = (out.tolist()[0] ?? []).slice(engine.encode(prompt).length).map(Number);
          got.theirs = { tokens, tps: (1000 * tokens.length) / ms };
        } else got[who] = await ours(prompt, who === 'ar' ? 'ar' : req.best);
      }
      rows.push({
        prompt: p,
        transformers: got.theirs?.tps ?? 0,
        ours: got.ar?.tps ?? 0,
        oursBest: got.best?.tps ?? 0,
        same: JSON.stringify(got.theirs?.tokens) === JSON.stringify(got.ar?.tokens),
      });
    }
    await engine.release();
    await model.dispose();
    self.postMessage({
      type: 'done',
      rows,
      versions: `transformers.js ${env.version}, onnxruntime-web ${ort.env.versions.web}`,
    } satisfies PeerMessage);
  } catch (e) {
    self.postMessage({
      type: 'error',
      error: e instanceof Error ? `${e.name}: ${e.message}` : String(e),
    } satisfies PeerMessage);
  }
};
