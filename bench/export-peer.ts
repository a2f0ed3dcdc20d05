/**
 * Writes a bundled model in the layout transformers.js loads (config.json, tokenizer files, onnx/model.onnx with
 * its weights in onnx/model.onnx_data), built by our graph builder on the same weights: the peer in the benchmark
 * and an independent greedy-decoding check.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildLlamaGraph, type GraphVariant, type WeightFormat } from '../src/model/graph/llama';
import { loadModel } from '../src/model/load';

export async function exportForTransformers(
  modelDir: string,
  outDir: string,
  options: { weights?: WeightFormat; variant?: GraphVariant } = {},
): Promise<void> {
  const model = await loadModel(modelDir);
  const graph = buildLlamaGraph(model.config, model.weights, model.files, {
    compute: 'fp32',
    weights: options.weights ?? 'float',
    variant: options.variant ?? 'plain',
    interface: 'transformers',
    weightsFile: 'model.onnx_data',
  });
  mkdirSync(join(outDir, 'onnx'), { recursive: true });
  writeFileSync(join(outDir, 'onnx', 'model.onnx'), graph.model);
  const data = graph.externalData.find((d) => d.path === 'model.onnx_data');
  if (!data || graph.externalData.length !== 1) throw new Error('export: expected all weights in model.onnx_data');
  writeFileSync(join(outDir, 'onnx', 'model.onnx_data'), data.data);
  const config = JSON.parse(readFileSync(join(modelDir, 'config.json'), 'utf8'));
  config['transformers.js_config'] = { use_external_data_format: true, dtype: 'fp32' };
  writeFileSync(join(outDir, 'config.json'), JSON.stringify(config, null, 1));
  for (const f of ['generation_config.json', 'tokenizer.json', 'tokenizer_config.json']) {
    if (existsSync(join(modelDir, f))) copyFileSync(join(modelDir, f), join(outDir, f));
  }
}
