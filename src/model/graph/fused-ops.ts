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
   * RoPE on x [1, q, heads * headDim] with cos/sin tables [q, headDim / 2], row s of x rotated by row s of the tables
   * (`first` from firstTableRow; the tables hold each row's own position, so every tree node gets its own).
   */
  const rotary = (x: string, heads: number, first: string, cos: string, sin: string) =>
    g.node('RotaryEmbedding', [x, first, cos, sin], {
      domain: MS,
      attrs: { num_heads: heads, rotary_embedding_dim: headDim, interleaved: 0 },
    })[0] as string;
  return { norm, skipNorm, rotary };
}

/**
 * RotaryEmbedding's position_ids for per-call tables: one element, 0, which the op reads as the first row's position
 * and gives row s position 0 + s, so row s reads row s of the tables. A constant (an initializer on the GPU), not a
 * Range over the call's rows: a Range runs on the CPU, and onnxruntime would upload its result every call.
 */
export const firstTableRow = (g: OnnxGraph): string => g.constInt64([0], [1], 'first_table_row');
