import { describe, expect, it } from 'vitest';
import type { SpecEngine } from '../src/engine/engine';
import { benchEngines, type EngineExtras, extrasOptions } from './heads-engines';

/** An engine as benchEngines sees it: its target's graph variant, and release. */
const fakeEngine = (variant: string) =>
  ({ target: { graph: { variant } }, release: async () => {} }) as unknown as SpecEngine;

async function loads(
  methods: Parameters<typeof benchEngines>[0],
  device: 'wasm' | 'webgpu' = 'wasm',
  draftModel = true,
) {
  const asked: EngineExtras[] = [];
  // Graph 'auto' picks by timing: the pair got hybrid, a later engine left to itself would get plain.
  const { engineFor } = await benchEngines(
    methods,
    { medusa: 'heads/medusa', eagle3: 'heads/eagle3' },
    async (extras) => {
      asked.push(extras);
      return fakeEngine(asked.length === 1 ? 'hybrid' : (extras.graph ?? 'plain'));
    },
    () => {},
    device,
    draftModel,
  );
  return { asked, engineFor };
}

describe('benchEngines', () => {
  it("loads every further engine with the pair's graph variant, so their plain decoding is the pair's", async () => {
    const { asked, engineFor } = await loads(['ar', 'eagle', 'medusa', 'swift']);
    expect(asked.slice(1)).toEqual([
      { heads: 'heads/eagle3', graph: 'hybrid' },
      { heads: 'heads/medusa', graph: 'hybrid' },
      { layerSwitches: true, graph: 'hybrid' },
    ]);
    for (const m of ['eagle', 'medusa', 'swift'] as const) expect(engineFor(m).target.graph.variant).toBe('hybrid');
    expect(extrasOptions({ heads: 'h', graph: 'hybrid' }, 'd')).toEqual({ heads: 'h', graph: 'hybrid' });
  });

  it('loads the draft model only where a planned method uses it (needs it, or auto may)', async () => {
    expect((await loads(['ar', 'lookup', 'lookahead', 'eagle'])).asked[0]).toEqual({});
    expect((await loads(['ar', 'chain'])).asked[0]).toEqual({ draft: true });
    expect((await loads(['ar', 'auto'])).asked[0]).toEqual({ draft: true });
    // auto on WebGPU runs on an engine with the EAGLE head and the draft model.
    expect((await loads(['ar', 'auto'], 'webgpu')).asked[1]).toEqual({
      heads: 'heads/eagle3',
      graph: 'hybrid',
      draft: true,
    });
  });

  it('loads no draft model at all without one (bench --no-draft, the GPU kit without its folder)', async () => {
    const { asked } = await loads(['ar', 'chain', 'auto', 'eagle'], 'webgpu', false);
    expect(asked).toEqual([{}, { heads: 'heads/eagle3', graph: 'hybrid' }, { heads: 'heads/eagle3', graph: 'hybrid' }]);
  });
});
