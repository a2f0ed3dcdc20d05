/**
 * The layer-switch check, on any runtime and device: a runner with switches and every switch on computes exactly
 * what the same variant without switches computes (the switches' run branches are the body's own nodes), and with
 * the attention of layer 1 and the MLP of layer 2 off it computes what the float64 reference computes with those
 * sub-layers removed.
 */
import { chainBias } from '../../engine/tree';
import { maxDiff } from '../../util/max-diff';
import type { GraphVariant } from '../graph/llama';
import { ModelRunner, type Ort } from '../runner';
import { randomModel } from './random-model';
import { referenceForward } from './reference-llama';

const PROMPT = [3, 17, 42, 8, 25, 60, 1];
export const SWITCH_CHECK_LAYERS = 4;

const prefill = (tokens: number[]) => ({
  tokens,
  positions: tokens.map((_, i) => i),
  bias: chainBias(0, tokens.length),
  rows: tokens.map((_, i) => i),
});

export interface SwitchCheck {
  /** The runner with switches, all on, against the same graph without switches (0 when exactly equal). */
  allOn: number;
  /** All on through forwardSkipping with nothing skipped, against the graph without switches. */
  noneSkipped: number;
  /** Layer 1's attention and layer 2's MLP skipped, against the float64 reference without them (largest row). */
  skipped: number;
  /** How far skipping moved the logits (to show that it skipped something). */
  moved: number;
  canSkip: { switched: boolean; plain: boolean };
}

/** In fp32 compute (the reference's tolerance), on `device` with the `graph` variant. */
export async function checkSwitches(ort: Ort, device: 'wasm' | 'webgpu', graph: GraphVariant): Promise<SwitchCheck> {
  const L = SWITCH_CHECK_LAYERS;
  const { model, weights } = randomModel({ num_hidden_layers: L });
  // A test of the graph itself: built as asked, without the load-time check against the plain graph.
  const plain = await ModelRunner.create(ort, model, { device, graph, compute: 'fp32', checkGraph: false });
  const switched = await ModelRunner.create(ort, model, {
    device,
    graph,
    compute: 'fp32',
    layerSwitches: true,
    checkGraph: false,
  });
  try {
    const a = await plain.forward(prefill(PROMPT));
    const b = await switched.forward(prefill(PROMPT));
    switched.reset();
    const none = await switched.forwardSkipping(prefill(PROMPT), new Uint8Array(2 * L));
    const skip = new Uint8Array(2 * L);
    skip[1] = 1;
    skip[L + 2] = 1;
    switched.reset();
    const skippedLogits = await switched.forwardSkipping(prefill(PROMPT), skip);
    const ref = referenceForward(
      model.config,
      weights,
      PROMPT,
      PROMPT.map((_, i) => i),
      (i, j) => j <= i,
      { attention: [1], mlp: [2] },
    );
    const V = model.config.vocabSize;
    let skipped = 0;
    for (let r = 0; r < PROMPT.length; r++)
      skipped = Math.max(skipped, maxDiff(skippedLogits.subarray(r * V, (r + 1) * V), ref[r] as Float64Array));
    if (skippedLogits.length !== a.length) throw new Error('a skipping call returned another number of rows');
    return {
      allOn: maxDiff(a, b),
      noneSkipped: maxDiff(a, none),
      skipped,
      moved: maxDiff(a, skippedLogits),
      canSkip: { switched: switched.canSkipLayers, plain: plain.canSkipLayers },
    };
  } finally {
    await plain.release();
    await switched.release();
  }
}
