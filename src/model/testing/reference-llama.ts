/**
 * An independent, deliberately naive Llama forward pass in float64 (plain loops over the HF math), used by tests to
 * check the ONNX graph. It attends over an explicit visibility predicate, so trees and chains are both easy.
 */
import { type LlamaConfig, ropeInvFreq } from '../config';

export type Weights = (name: string) => Float32Array;

export function matvec(
  w: Float32Array,
  x: Float64Array,
  rows: number,
  cols: number,
  bias?: Float32Array,
): Float64Array {
  const out = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let acc = bias ? (bias[r] as number) : 0;
    for (let c = 0; c < cols; c++) acc += (w[r * cols + c] as number) * (x[c] as number);
    out[r] = acc;
  }
  return out;
}

export function rmsNorm(x: Float64Array, w: Float32Array, eps: number): Float64Array {
  let ms = 0;
  for (const v of x) ms += v * v;
  const inv = 1 / Math.sqrt(ms / x.length + eps);
  return x.map((v, i) => v * inv * (w[i] as number));
}

export function rope(v: Float64Array, heads: number, hd: number, pos: number, invFreq: Float32Array): void {
  const half = hd / 2;
  for (let h = 0; h < heads; h++) {
    for (let d = 0; d < half; d++) {
      const a = pos * (invFreq[d] as number);
      const x1 = v[h * hd + d] as number;
      const x2 = v[h * hd + d + half] as number;
      v[h * hd + d] = x1 * Math.cos(a) - x2 * Math.sin(a);
      v[h * hd + d + half] = x2 * Math.cos(a) + x1 * Math.sin(a);
    }
  }
}

/**
 * Logits [n][vocab] for every position of the sequence; token i attends to j where visible(i, j). `skip` removes
 * sub-layers (their residual branch is left out), as self-speculation's layer switches do.
 */
export function referenceForward(
  cfg: LlamaConfig,
  W: Weights,
  tokens: readonly number[],
  positions: readonly number[],
  visible: (i: number, j: number) => boolean,
  skip: { attention?: readonly number[]; mlp?: readonly number[] } = {},
  /** Filled when given: the residual stream entering each layer (index L: leaving the last), and the final-normed state. */
  collect?: { layerInputs: Float64Array[][]; final: Float64Array[] },
  /** What every projection's input becomes before its matmul (int8: quantised per row); default as it is. */
  input: (x: Float64Array) => Float64Array = (x) => x,
): Float64Array[] {
  const { hiddenSize: H, numHeads: nh, numKvHeads: kvh, headDim: hd, intermediateSize: M, vocabSize: V } = cfg;
  const n = tokens.length;
  const invFreq = ropeInvFreq(cfg);
  const emb = W('model.embed_tokens.weight');
  let xs: Float64Array[] = tokens.map((t) => Float64Array.from(emb.subarray(t * H, (t + 1) * H)));
  const bias = (name: string) => (cfg.qkvBias ? W(name) : undefined);
  for (let l = 0; l < cfg.numLayers; l++) {
    collect?.layerInputs.push(xs.map((x) => Float64Array.from(x)));
    const p = `model.layers.${l}`;
    const skipAttention = skip.attention?.includes(l) ?? false;
    const skipMlp = skip.mlp?.includes(l) ?? false;
    const hs = xs.map((x) => input(rmsNorm(x, W(`${p}.input_layernorm.weight`), cfg.rmsNormEps)));
    const qs = hs.map((h) =>
      matvec(W(`${p}.self_attn.q_proj.weight`), h, nh * hd, H, bias(`${p}.self_attn.q_proj.bias`)),
    );
    const ks = hs.map((h) =>
      matvec(W(`${p}.self_attn.k_proj.weight`), h, kvh * hd, H, bias(`${p}.self_attn.k_proj.bias`)),
    );
    const vs = hs.map((h) =>
      matvec(W(`${p}.self_attn.v_proj.weight`), h, kvh * hd, H, bias(`${p}.self_attn.v_proj.bias`)),
    );
    qs.forEach((q, i) => {
      rope(q, nh, hd, positions[i] as number, invFreq);
    });
    ks.forEach((k, i) => {
      rope(k, kvh, hd, positions[i] as number, invFreq);
    });
    const next: Float64Array[] = [];
    for (let i = 0; i < n; i++) {
      const ctx = new Float64Array(nh * hd);
      for (let h = 0; h < nh; h++) {
        const kv = Math.floor(h / (nh / kvh));
        const scores: number[] = [];
        const cols: number[] = [];
        for (let j = 0; j < n; j++) {
          if (!visible(i, j)) continue;
          let s = 0;
          for (let d = 0; d < hd; d++) s += (qs[i]?.[h * hd + d] as number) * (ks[j]?.[kv * hd + d] as number);
          scores.push(s / Math.sqrt(hd));
          cols.push(j);
        }
        const max = Math.max(...scores);
        const e = scores.map((s) => Math.exp(s - max));
        const sum = e.reduce((a, b) => a + b, 0);
        cols.forEach((j, c) => {
          for (let d = 0; d < hd; d++) {
            ctx[h * hd + d] = (ctx[h * hd + d] as number) + ((e[c] as number) / sum) * (vs[j]?.[kv * hd + d] as number);
          }
        });
      }
      const o = matvec(W(`${p}.self_attn.o_proj.weight`), input(ctx), H, nh * hd);
      const x = skipAttention
        ? Float64Array.from(xs[i] as Float64Array)
        : (xs[i] as Float64Array).map((v, c) => v + (o[c] as number));
      if (skipMlp) {
        next.push(x);
        continue;
      }
      const h2 = input(rmsNorm(x, W(`${p}.post_attention_layernorm.weight`), cfg.rmsNormEps));
      const gate = matvec(W(`${p}.mlp.gate_proj.weight`), h2, M, H);
      const up = matvec(W(`${p}.mlp.up_proj.weight`), h2, M, H);
      const act = gate.map((g, c) => (g / (1 + Math.exp(-g))) * (up[c] as number));
      const down = matvec(W(`${p}.mlp.down_proj.weight`), input(act), H, M);
      next.push(x.map((v, c) => v + (down[c] as number)));
    }
    xs = next;
  }
  collect?.layerInputs.push(xs.map((x) => Float64Array.from(x)));
  const head = W(cfg.tieWordEmbeddings ? 'model.embed_tokens.weight' : 'lm_head.weight');
  const normed = xs.map((x) => rmsNorm(x, W('model.norm.weight'), cfg.rmsNormEps));
  collect?.final.push(...normed);
  return normed.map((x) => matvec(head, input(x), V, H));
}
