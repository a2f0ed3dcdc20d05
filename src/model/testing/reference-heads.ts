/** Float64 references for the draft heads (the HF/upstream math as plain loops), to check their graphs. */
import type { LlamaConfig } from '../config';
import { matvec, rmsNorm, rope, type Weights } from './reference-llama';

/** Medusa: per head k, x = h; x = x + silu(W x + b) per ResBlock; logits = P x. Returns [K][V]. */
export function referenceMedusa(
  W: Weights,
  hidden: Float64Array,
  heads: number,
  layers: number,
  V: number,
): Float64Array[] {
  const d = hidden.length;
  return Array.from({ length: heads }, (_, k) => {
    let x = Float64Array.from(hidden);
    for (let l = 0; l < layers; l++) {
      const y = matvec(W(`${k}.${l}.linear.weight`), x, d, d, W(`${k}.${l}.linear.bias`));
      x = x.map((v, i) => v + (y[i] as number) / (1 + Math.exp(-(y[i] as number))));
    }
    return matvec(W(`${k}.${layers}.weight`), x, V, d);
  });
}

export interface Eagle3Row {
  /** The next token's embedding (the target's). */
  embed: Float64Array;
  /** A real row's fused target feature [3d], or a drafted row's parent `out` [d]. */
  feature?: Float64Array;
  drafted?: Float64Array;
  position: number;
}

/**
 * EAGLE-3's layer over rows; row i attends to rows j with visible(i, j). Returns each row's `out` [d] and logits
 * over the draft vocabulary.
 */
export function referenceEagle3(
  W: Weights,
  cfg: Pick<
    LlamaConfig,
    'hiddenSize' | 'numHeads' | 'numKvHeads' | 'headDim' | 'intermediateSize' | 'rmsNormEps' | 'ropeTheta'
  >,
  draftVocab: number,
  rows: Eagle3Row[],
  visible: (i: number, j: number) => boolean,
): { out: Float64Array[]; logits: Float64Array[] } {
  const { hiddenSize: d, numHeads: nh, numKvHeads: kvh, headDim: hd, intermediateSize: I, rmsNormEps: eps } = cfg;
  const m = 'midlayer';
  const invFreq = Float32Array.from({ length: hd / 2 }, (_, i) => 1 / cfg.ropeTheta ** ((2 * i) / hd));
  const gs = rows.map((r) => (r.feature ? matvec(W('fc.weight'), r.feature, d, 3 * d) : (r.drafted as Float64Array)));
  const ins = rows.map((r, i) => {
    const a = rmsNorm(r.embed, W(`${m}.input_layernorm.weight`), eps);
    const b = rmsNorm(gs[i] as Float64Array, W(`${m}.hidden_norm.weight`), eps);
    return Float64Array.from([...a, ...b]);
  });
  const qs = ins.map((x, i) => {
    const q = matvec(W(`${m}.self_attn.q_proj.weight`), x, nh * hd, 2 * d);
    rope(q, nh, hd, rows[i]?.position as number, invFreq);
    return q;
  });
  const ks = ins.map((x, i) => {
    const k = matvec(W(`${m}.self_attn.k_proj.weight`), x, kvh * hd, 2 * d);
    rope(k, kvh, hd, rows[i]?.position as number, invFreq);
    return k;
  });
  const vs = ins.map((x) => matvec(W(`${m}.self_attn.v_proj.weight`), x, kvh * hd, 2 * d));
  const out: Float64Array[] = [];
  const logits: Float64Array[] = [];
  rows.forEach((_, i) => {
    const ctx = new Float64Array(nh * hd);
    for (let h = 0; h < nh; h++) {
      const kv = Math.floor(h / (nh / kvh));
      const cols = rows.map((__, j) => j).filter((j) => visible(i, j));
      const scores = cols.map((j) => {
        let s = 0;
        for (let c = 0; c < hd; c++) s += (qs[i]?.[h * hd + c] as number) * (ks[j]?.[kv * hd + c] as number);
        return s / Math.sqrt(hd);
      });
      const max = Math.max(...scores);
      const e = scores.map((s) => Math.exp(s - max));
      const sum = e.reduce((a, b) => a + b, 0);
      cols.forEach((j, c) => {
        for (let t = 0; t < hd; t++)
          ctx[h * hd + t] = (ctx[h * hd + t] as number) + ((e[c] as number) / sum) * (vs[j]?.[kv * hd + t] as number);
      });
    }
    const o = matvec(W(`${m}.self_attn.o_proj.weight`), ctx, d, nh * hd);
    const x = (gs[i] as Float64Array).map((v, c) => v + (o[c] as number));
    const n = rmsNorm(x, W(`${m}.post_attention_layernorm.weight`), eps);
    const gate = matvec(W(`${m}.mlp.gate_proj.weight`), n, I, d);
    const up = matvec(W(`${m}.mlp.up_proj.weight`), n, I, d);
    const act = gate.map((g, c) => (g / (1 + Math.exp(-g))) * (up[c] as number));
    const down = matvec(W(`${m}.mlp.down_proj.weight`), act, d, I);
    const y = x.map((v, c) => v + (down[c] as number));
    out.push(y);
    logits.push(matvec(W('lm_head.weight'), rmsNorm(y, W('norm.weight'), eps), draftVocab, d));
  });
  return { out, logits };
}
