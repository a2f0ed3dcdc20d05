/**
 * Exact decoding on WebGPU in Node (Dawn; lavapipe here), fp16 compute: the bundled pair, greedy, a prompt where
 * speculation without exact commits another token than plain decoding. Seen without exact: the chain diverged from
 * plain decoding at token 6 of this prompt on the hybrid and fused graphs (a verified row and a one-token row differ
 * by up to 0.05 in fp16 there, and the two best logits are closer than that). With exact the target is built
 * row-invariant, passes its check at load, and every method below gives plain decoding token for token.
 */
import { describe, expect, it } from 'vitest';
import { nodeWebGpu, webGpuOrt, webGpuTitle } from '../runtime/testing/node-webgpu';
import type { Method } from './drafters/index';
import { SpecEngine } from './engine';
import { GREEDY } from './sampling';

const PROMPT =
  '"The little Durands were there, I conclude," said she, "with their mouths open to catch the music, like unfledged sparrows ready to be fed. They never miss';
const TOKENS = 24;
const shaderF16 = nodeWebGpu.ok && nodeWebGpu.adapter.shaderF16;

describe.skipIf(!nodeWebGpu.ok)(webGpuTitle('exact decoding'), () => {
  it.skipIf(!shaderF16)(
    'fp16: chain, lookup and dynamic tree give plain decoding token for token on a prompt where they do not without it',
    async () => {
      const engine = await SpecEngine.load(webGpuOrt(), {
        target: 'public/models/austen-target',
        draft: 'public/models/austen-draft',
        device: 'webgpu',
        precision: 'fp16',
        exact: true,
        calibration: 'never',
      });
      try {
        expect(engine.target.exact).toBe(true);
        expect(engine.target.precision).toBe('fp16');
        const run = async (method: Method) => {
          const it = engine.generate(PROMPT, { method, maxNewTokens: TOKENS, sampling: GREEDY });
          for (;;) {
            const step = await it.next();
            if (step.done) return step.value.tokens;
          }
        };
        const plain = await run('ar');
        expect(plain).toHaveLength(TOKENS);
        for (const method of ['chain', 'lookup', 'dynamic'] as const) expect(await run(method), method).toEqual(plain);
      } finally {
        await engine.release();
      }
    },
    360_000, // 63 s here with Mesa's shader cache warm, 128 s with it empty (a fresh machine)
  );
});
