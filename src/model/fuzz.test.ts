/**
 * Fuzzed model folders in Node: 100 seeded mutations of config.json values, safetensors headers, bytes and lengths,
 * and tokenizer files, half on the target and half on the draft. Every one either loads and generates correctly
 * (speculative output equals plain decoding, tokens in the vocabulary) or is refused with a model error that names
 * the broken model; never a hang, a crash of another kind, or wrong output. (The browser worker runs a subset:
 * e2e/fuzz.spec.ts.)
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SpecEngine } from '../engine/engine';
import { GREEDY } from '../engine/sampling';
import { chainBias } from '../engine/tree';
import { ortForNode } from '../runtime/ort-node';
import { ModelLoadError } from './errors';
import { type ModelFiles, mutateFolder, tinyFolder } from './testing/fuzz';

const BUNDLED = 'public/models/austen-target';
const tokenizer: ModelFiles = Object.fromEntries(
  ['tokenizer.json', 'tokenizer_config.json'].map((f) => [f, new Uint8Array(readFileSync(join(BUNDLED, f)))]),
);
const root = mkdtempSync(join(tmpdir(), 'spec-fuzz-'));

function write(name: string, files: ModelFiles): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  for (const [file, bytes] of Object.entries(files)) writeFileSync(join(dir, file), bytes);
  return dir;
}

const good = { target: write('target', tinyFolder(tokenizer, 1)), draft: write('draft', tinyFolder(tokenizer, 2)) };

async function tokens(engine: SpecEngine, method: 'ar' | 'chain'): Promise<number[]> {
  const it = engine.generate('She was not', { method, maxNewTokens: 6, sampling: GREEDY });
  let s = await it.next();
  while (!s.done) s = await it.next();
  return s.value.tokens;
}

function within<T>(ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`HANG: ${what} took over ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

describe('fuzzed model folders (Node, wasm)', () => {
  it('100 seeded mutations of target and draft: a named error or a correct run, every time', async () => {
    const outcomes = { loaded: 0, refused: 0 };
    for (let seed = 1; seed <= 100; seed++) {
      const role = seed % 2 === 1 ? 'target' : 'draft';
      const { files, description } = mutateFolder(tinyFolder(tokenizer, role === 'target' ? 1 : 2), seed);
      const dir = write(`case-${seed}`, files);
      const what = `seed ${seed}, ${role}: ${description}`;
      let engine: SpecEngine | null = null;
      try {
        engine = await within(30_000, what, SpecEngine.load(ortForNode(), { ...good, [role]: dir, device: 'wasm' }));
      } catch (e) {
        expect(e, what).toBeInstanceOf(ModelLoadError);
        expect((e as Error).message, what).toMatch(new RegExp(`^(${role} model |vocabulary mismatch)`));
        expect((e as Error).message.split('\n'), what).toHaveLength(1);
        outcomes.refused++;
        continue;
      }
      try {
        let plain: number[];
        let spec: number[];
        try {
          plain = await within(30_000, what, tokens(engine, 'ar'));
          spec = await within(30_000, what, tokens(engine, 'chain'));
        } catch (e) {
          // Weights that load but overflow in compute: refused when the first logits come back, naming the model.
          expect((e as Error).name, what).toBe('ModelOutputError');
          expect((e as Error).message, what).toMatch(/^the (target|draft) model produced (NaN|infinite) logits/);
          outcomes.refused++;
          continue;
        }
        expect(spec, what).toEqual(plain);
        for (const t of plain) expect(t, what).toBeLessThan(engine.target.config.vocabSize);
        // What it generated from is sound: every logit of the prompt's last position is finite.
        const ids = engine.encode('She was not');
        engine.target.reset();
        const logits = await engine.target.forward({
          tokens: ids,
          positions: ids.map((_, i) => i),
          bias: chainBias(0, ids.length),
          rows: [ids.length - 1],
        });
        expect(logits.every(Number.isFinite), `${what}: non-finite logits from a model that loaded`).toBe(true);
        outcomes.loaded++;
      } finally {
        await engine.release();
      }
    }
    // Both outcomes happen: the mutations are not all fatal, and not all harmless.
    expect(outcomes.refused).toBeGreaterThan(30);
    expect(outcomes.loaded).toBeGreaterThan(5);
    console.log(`fuzz: ${outcomes.loaded} mutated folders loaded and ran correctly, ${outcomes.refused} refused`);
  }, 600_000);
});
