/**
 * onnxruntime's contrib ops for a Llama-style layer, shared by the target's fused and hybrid bodies and the EAGLE
 * head's fused form: RMSNorm (SimplifiedLayerNormalization, fp32 statistics), residual add + RMSNorm in one op
 * (SkipSimplifiedLayerNormalization) and RoPE (RotaryEmbedding on [1, q, heads * headDim] from per-call tables).
 */
import type { OnnxGraph } from './onnx';

const MS = 'com.microsoft';

export function fusedOps(
  g: OnnxGraph,
  /** A norm weight by checkpoint name, in the compute type. */
  weight: (name: string) => string,
  rmsNormEps: number,
  headDim: number,
) {
  const epsilon = { f: rmsNormEps };
  const norm = (x: string, w: string) =>
    g.op('SimplifiedLayerNormalization', [x, weight(w)], { axis: -1, epsilon, stash_type: 1 });
  /** x + skip and its RMSNorm with weight w: { normed, sum }. */
  const skipNorm = (x: string, skip: string, w: string) => {
    const [normed, , , sum] = g.node('SkipSimplifiedLayerNormalization', [x, skip, weight(w)], {
      domain: MS,
      attrs: { epsilon },
      outputs: [`${w}.normed`, '', '', `${w}.residual`],
    });
    return { normed: normed as string, sum: sum as string };
  };
  /**
   * RoPE on x [1, q, heads * headDim] with cos/sin tables [q, headDim / 2], each row indexed by `local` [1, q]
   * (its 0..q-1, so every tree node gets its own position).
   */
  const rotary = (x: string, heads: number, local: string, cos: string, sin: string) =>
    g.node('RotaryEmbedding', [x, local, cos, sin], {
      domain: MS,
      attrs: { num_heads: heads, rotary_embedding_dim: headDim, interleaved: 0 },
    })[0] as string;
  return { norm, skipNorm, rotary };
}

/** The row count q of a tensor whose axis `axis` holds it, and the rows' local indices 0..q-1 as [1, q]. */
export function localRows(g: OnnxGraph, shaped: string, axis: number): { q: string; local: string } {
  const scalar = (v: number) => g.constInt64([v], []);
  const q = g.op('Gather', [g.op('Shape', [shaped]), scalar(axis)], { axis: 0 });
  const local = g.op('Unsqueeze', [g.op('Range', [scalar(0), q, scalar(1)]), g.constInt64([0])]);
  return { q, local };
}
