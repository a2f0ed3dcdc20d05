/**
 * The weights an int4 graph computes with, for the float64 reference: every projection and the head dequantised
 * from the same blockwise quantisation the graph builder applies, the embedding table rounded to fp16.
 */
import type { LlamaConfig } from '../config';
import { f16ToF32, f32ToF16 } from '../convert';
import { dequantizeInt4, type Int4Options, quantizeInt4 } from '../quant';
import type { Weights } from './reference-llama';

const EMBED = 'model.embed_tokens.weight';

/** A config and weights such that referenceForward computes what the int4 graph should. */
export function int4Reference(
  cfg: LlamaConfig,
  W: Weights,
  options: Int4Options = {},
): { cfg: LlamaConfig; weights: Weights } {
  const cache = new Map<string, Float32Array>();
  const dequant = (name: string, rows: number, cols: number) =>
    dequantizeInt4(quantizeInt4(W(name), rows, cols, options));
  const weights: Weights = (name) => {
    let w = cache.get(name);
    if (w) return w;
    if (name === EMBED) w = W(EMBED).map((v) => f16ToF32(f32ToF16(v)));
    else if (name === 'lm_head.weight') {
      w = dequant(cfg.tieWordEmbeddings ? EMBED : name, cfg.vocabSize, cfg.hiddenSize);
    } else if (/_proj\.weight$/.test(name)) {
      const raw = W(name);
      const cols = /down_proj|o_proj/.test(name)
        ? name.includes('down_proj')
          ? cfg.intermediateSize
          : cfg.numHeads * cfg.headDim
        : cfg.hiddenSize;
      w = dequant(name, raw.length / cols, cols);
    } else w = W(name);
    cache.set(name, w);
    return w;
  };
  // The head is its own (dequantised) matrix even when the checkpoint ties it to the embedding.
  return { cfg: { ...cfg, tieWordEmbeddings: false }, weights };
}
