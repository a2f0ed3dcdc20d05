/**
 * Layer switches on WebGPU in Node (Dawn; lavapipe here), in every graph variant: the If nodes run on the CPU and
 * their branches on the GPU. All on is the same variant without switches exactly; some off is the float64
 * reference without those sub-layers (src/model/testing/switch-check.ts).
 */
import { describe, expect, it } from 'vitest';
import { nodeWebGpu, webGpuOrt, webGpuTitle } from '../../runtime/testing/node-webgpu';
import { checkSwitches } from '../testing/switch-check';
import { GRAPH_VARIANTS } from './llama';

describe.skipIf(!nodeWebGpu.ok)(webGpuTitle('layer switches on WebGPU in Node'), () => {
  it.each(GRAPH_VARIANTS)(
    '%s graph: all on equals it without switches; some off equals the reference',
    async (graph) => {
      const c = await checkSwitches(webGpuOrt(), 'webgpu', graph);
      expect(c.canSkip).toEqual({ switched: true, plain: false });
      expect(c.allOn).toBe(0);
      expect(c.noneSkipped).toBe(0);
      expect(c.skipped).toBeLessThan(1e-4);
      expect(c.moved).toBeGreaterThan(1e-3);
    },
  );
});
