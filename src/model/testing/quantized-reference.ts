/**
 * The weights an int4 or int8 graph computes with, for the float64 reference: every projection and the head
 * dequantised from the same quantisation the graph builder applies, the embedding table rounded to fp16; for int8
 * also what happens to each projection's input (quantised per row).
 */
import type { LlamaConfig } from '../config';
import { f16ToF32, f32ToF16 } from '../convert';
import {
  dequantizeInt4,
  dequantizeInt8,
  type Int4Options,
  quantizeActivationRow,
  quantizeInt4,
  quantizeInt8,
} from '../quant';
import type { Weights } from './reference-llama';

const EMBED = 'model.embed_tokens.weight';

/** A config and weights such that referenceForward computes what the int4 graph should. */
export function int4Reference(
  cfg: LlamaConfig,
  W: Weights,
  options: Int4Options = {},
): { cfg: LlamaConfig; weights: Weights } {
  return quantizedReference(cfg, W, (w, rows, cols) => dequantizeInt4(quantizeInt4(w, rows, cols, options)));
}

/** The same for the int8 graph, plus the input each projection sees: referenceForward's `input`. */
export function int8Reference(
  cfg: LlamaConfig,
  W: Weights,
): { cfg: LlamaConfig; weights: Weights; input: (x: Float64Array) => Float64Array } {
  return {
    ...quantizedReference(cfg, W, (w, rows, cols) => dequantizeInt8(quantizeInt8(w, rows, cols))),
    input: quantizeActivationRow,
  };
}

function quantizedReference(
  cfg: LlamaConfig,
  W: Weights,
  roundTrip: (w: Float32Array, rows: number, cols: number) => Float32Array,
): { cfg: LlamaConfig; weights: Weights } {
  const cache = new Map<string, Float32Array>();
  const weights: Weights = (name) => {
    let w = cache.get(name);
    if (w) return w;
    if (name === EMBED) w = W(EMBED).map((v) => f16ToF32(f32ToF16(v)));
    else if (name === 'lm_head.weight') {
      w = roundTrip(W(cfg.tieWordEmbeddings ? EMBED : name), cfg.vocabSize, cfg.hiddenSize);
    } else if (/_proj\.weight$/.test(name)) {
      const raw = W(name);
      const cols = /down_proj|o_proj/.test(name)
        ? name.includes('down_proj')
          ? cfg.intermediateSize
          : cfg.numHeads * cfg.headDim
        : cfg.hiddenSize;
      w = roundTrip(raw, raw.length / cols, cols);
    } else w = W(name);
    cache.set(name, w);
    return w;
  };
  // The head is its own (dequantised) matrix even when the checkpoint ties it to the embedding.
  return { cfg: { ...cfg, tieWordEmbeddings: false }, weights };
}
