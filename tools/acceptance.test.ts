/**
 * Acceptance priors on the bundled models: the tool measures one that applies to the models it ran, the priors shipped
 * in public/models were measured with the bundled models as they are now, and `auto` starts from them.
 */
import { cpSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpecEngine } from '../src/engine/engine';
import { identityOf, PRIOR_KEY, readPrior, type WeightsIdentity } from '../src/engine/priors';
import { ortForNode } from '../src/runtime/ort-node';
import { chainDrafters, measureChain, priorEntry, priorPrompts, withPrior, writePrior } from './acceptance';

const TARGET = 'public/models/austen-target';
const DRAFT = 'public/models/austen-draft';
const HEADS = 'public/models/austen-eagle3';

let engine: SpecEngine;
beforeAll(async () => {
  engine = await SpecEngine.load(ortForNode(), { target: TARGET, draft: DRAFT, heads: HEADS, device: 'wasm' });
});
afterAll(async () => {
  await engine?.release();
});

const configOf = (folder: string) => JSON.parse(readFileSync(join(folder, 'config.json'), 'utf8'));

describe('acceptance priors', () => {
  it('the prompts are held out from training and from the bench', () => {
    const bench = (JSON.parse(readFileSync('bench/prompts.json', 'utf8')) as { prompts: { text: string }[] }).prompts;
    const texts = priorPrompts();
    expect(texts.length).toBe(28);
    for (const p of bench) expect(texts).not.toContain(p.text.trim());
  });

  it("measures each drafter's top-guess chain and writes a prior that applies to the models it ran", async () => {
    const texts = priorPrompts().slice(0, 4);
    const drafters = chainDrafters(engine, 4);
    expect(drafters.map((d) => d.role)).toEqual(['draft', 'heads']);
    for (const { role, drafter, weights } of drafters) {
      const m = await measureChain(engine, drafter, texts, 32);
      expect(m.tokens).toBe(128);
      // Every round but a generation's last offers depth 1, and each depth is offered where the one above was taken,
      // but in a generation's last round (its chain cut to the tokens still wanted).
      expect(m.offered[0]).toBeGreaterThanOrEqual(m.rounds - texts.length);
      for (let d = 1; d < m.offered.length; d++) {
        expect(m.offered[d]).toBeLessThanOrEqual(m.accepted[d - 1] as number);
        expect(m.offered[d]).toBeGreaterThanOrEqual((m.accepted[d - 1] as number) - texts.length);
      }
      expect(m.depths.length).toBeLessThanOrEqual(4);
      const entry = priorEntry(engine, weights, m, { prompts: texts.length });
      const folder = join(mkdtempSync(join(tmpdir(), 'prior-')), role);
      cpSync(role === 'draft' ? DRAFT : HEADS, folder, { recursive: true });
      const before = configOf(folder);
      writePrior(folder, entry);
      const after = configOf(folder);
      expect({ ...after, [PRIOR_KEY]: undefined }).toEqual({ ...before, [PRIOR_KEY]: undefined });
      // The depths down to the first that rests on fewer than 20 rounds.
      const read = readPrior(after[PRIOR_KEY], identityOf(engine.target.model), weights);
      const kept = m.offered.findIndex((o) => o < 20);
      expect(read).toEqual({ prior: { depths: m.depths.slice(0, kept < 0 ? undefined : kept) } });
      expect(m.offered[0]).toBeGreaterThanOrEqual(20);
    }
  });

  it('writes the prior into config.json keeping every other byte: numbers as written, keys, nested look-alikes', () => {
    const original = `{
  "rope_theta": 10000.0,
  "rms_norm_eps": 1e-05,
  "rope_scaling": { "factor": 8.0, "rope_type": "llama3", "acceptance_prior": "not this one" },
  "big": 12345678901234567890,
  "note": "a \\"quoted\\" acceptance_prior, {braces} and [brackets]",
  "list": [1.0, {"acceptance_prior": 2}]
}
`;
    const measured = { depths: [0.5], offered: [30], accepted: [15], rounds: 30, tokens: 60 };
    const entry = (depths: number[]) => ({
      ...priorEntry(engine, { weightBytes: 1, digest: '0' }, measured, {}),
      depths,
    });
    const once = withPrior(original, entry([0.5]));
    const again = withPrior(once, entry([0.25]));
    for (const [text, depths] of [
      [once, [0.5]],
      [again, [0.25]],
    ] as const) {
      // Only the top-level key is set, once; the text before it is the original's, byte for byte.
      expect(JSON.parse(text)[PRIOR_KEY].depths).toEqual(depths);
      expect(JSON.parse(text).rope_scaling[PRIOR_KEY]).toBe('not this one');
      expect(text.split(`"${PRIOR_KEY}": {`).length).toBe(2);
      expect(text.startsWith(original.slice(0, original.lastIndexOf(']') + 1))).toBe(true);
      expect(text).toContain('"rope_theta": 10000.0');
      expect(text).toContain('"big": 12345678901234567890');
    }
    // Replaced in place: what follows the key's value is kept too.
    const middle = withPrior(`{"a": 1, "${PRIOR_KEY}": {"old": [1, 2]}, "b": 2.50}`, entry([0.5]));
    expect(middle.endsWith(', "b": 2.50}')).toBe(true);
    expect(JSON.parse(middle).b).toBe(2.5);
    expect(() => withPrior('[1, 2]', entry([0.5]))).toThrow('config.json is not a JSON object');
  });

  it('the shipped priors were measured with the bundled models as they are', () => {
    const target = identityOf(engine.target.model);
    for (const { role, weights } of chainDrafters(engine, 1)) {
      const read = readPrior(configOf(role === 'draft' ? DRAFT : HEADS)[PRIOR_KEY], target, weights);
      expect(read, role).toMatchObject({ prior: { depths: expect.any(Array) } });
    }
  });

  it("Medusa heads' prior too: one call a round, predicted as such, and auto starts from it", async () => {
    const medusa = await SpecEngine.load(ortForNode(), {
      target: TARGET,
      draft: DRAFT,
      heads: 'public/models/austen-medusa',
      device: 'wasm',
    });
    try {
      const [, heads] = chainDrafters(medusa, 4);
      expect(heads?.role).toBe('heads');
      const read = readPrior(
        configOf('public/models/austen-medusa')[PRIOR_KEY],
        identityOf(medusa.target.model),
        heads?.weights as WeightsIdentity,
      );
      expect(read).toMatchObject({ prior: { depths: expect.any(Array) } });
      let note = '';
      for await (const ev of medusa.generate('It is a truth universally acknowledged, that', {
        method: 'auto',
        maxNewTokens: 4,
      }))
        note ||= ev.note?.text ?? '';
      expect(note).toMatch(/, medusa [\d.]+ \(predicted\) tok\/s\)$/);
    } finally {
      await medusa.release();
    }
  });

  it('auto starts on the arm the priors favour; a stale prior is named and left out, one for another target left out quietly', async () => {
    const first = async (e: SpecEngine, sampling?: { temperature: number; seed: number }) => {
      const notes: string[] = [];
      for await (const ev of e.generate('It is a truth universally acknowledged, that', {
        method: 'auto',
        maxNewTokens: 12,
        ...(sampling ? { sampling } : {}),
      }))
        if (ev.note) notes.push(ev.note.text);
      return notes[0] ?? '';
    };
    // Greedy: an arm chosen on predictions alone, the draft model's chain's and the head's from their priors.
    // (Where the calibration found width nearly free, lookahead's predicted arm is listed too.)
    const greedy = await first(engine);
    expect(greedy).toMatch(/^auto: \w+ \(best: plain [\d.]+ \(predicted\), /);
    expect(greedy).toMatch(/, chain [\d.]+ \(predicted\), /);
    expect(greedy).toMatch(/, eagle [\d.]+ \(predicted\) tok\/s\)$/);
    // Sampled: a token matches a guess less often than the greedy acceptance the priors hold, so each arm is tried.
    expect(await first(engine, { temperature: 0.8, seed: 1 })).toMatch(/^auto: chain \(trying chain\)/);
    // A draft folder whose prior names other weights of this draft model (stale after a retrain): a warning at load,
    // and the chain is tried first. One that names another target is a pairing of its own: left out without a word.
    const loadWith = async (edit: (prior: Record<string, Record<string, unknown>>) => object) => {
      const folder = join(mkdtempSync(join(tmpdir(), 'prior-')), 'draft');
      cpSync(DRAFT, folder, { recursive: true });
      writePrior(folder, edit(configOf(folder)[PRIOR_KEY]) as never);
      const warnings: string[] = [];
      const e = await SpecEngine.load(ortForNode(), {
        target: TARGET,
        draft: folder,
        device: 'wasm',
        onProgress: (p) => {
          if (p.status === 'warning') warnings.push(`${p.name}: ${p.message}`);
        },
      });
      try {
        return { folder, warnings, note: await first(e) };
      } finally {
        await e.release();
      }
    };
    const stale = await loadWith((p) => ({ ...p, drafter: { ...p.drafter, digest: '00000000' } }));
    expect(stale.warnings).toEqual([
      `${stale.folder}: draft model ${stale.folder}: acceptance_prior was measured with other weights of this drafter: left out (auto measures this drafter instead)`,
    ]);
    expect(stale.note).toMatch(/^auto: chain \(trying chain\)/);
    const paired = await loadWith((p) => ({ ...p, target: { ...p.target, weightBytes: 1 } }));
    expect(paired.warnings).toEqual([]);
    expect(paired.note).toMatch(/^auto: chain \(trying chain\)/);
  });
});
