/**
 * Fuzzed model folders in the browser worker: seeded mutations (the same generator as the Node fuzz test,
 * src/model/testing/fuzz.ts) served to the element over HTTP. Each ends in a readable error naming the broken model
 * or in a normal run, never a hang; the element stays usable, and a good pair still generates afterwards.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type ModelFiles, mutateFolder, tinyFolder } from '../src/model/testing/fuzz';
import { expect, test } from './fixtures';

const ROOT = resolve(import.meta.dirname, '..');
const tokenizer: ModelFiles = Object.fromEntries(
  ['tokenizer.json', 'tokenizer_config.json'].map((f) => [
    f,
    new Uint8Array(readFileSync(join(ROOT, 'public/models/austen-target', f))),
  ]),
);

interface Outcome {
  ok: boolean;
  message: string;
}

test('20 fuzzed target and draft folders through the element and its worker: named errors, no hangs', async ({
  page,
  allowProblems,
}) => {
  test.setTimeout(300_000);
  // These folders have no generation_config.json, an optional file the loader asks for.
  allowProblems(/^HTTP 404: \S*\/fuzz\/[\w-]+\/generation_config\.json$/);
  const folders = new Map<string, ModelFiles>();
  folders.set('good-target', tinyFolder(tokenizer, 1));
  folders.set('good-draft', tinyFolder(tokenizer, 2));
  const cases: { role: 'target' | 'draft'; description: string }[] = [];
  for (let seed = 1; seed <= 20; seed++) {
    const role = seed % 2 === 1 ? 'target' : 'draft';
    const m = mutateFolder(tinyFolder(tokenizer, role === 'target' ? 1 : 2), seed * 7);
    folders.set(`case-${seed}`, m.files);
    cases.push({ role, description: m.description });
  }
  await page.route('**/fuzz/**', (route) => {
    const [, name, file] = new URL(route.request().url()).pathname.match(/\/fuzz\/([^/]+)\/(.+)$/) ?? [];
    const bytes = folders.get(name ?? '')?.[file ?? ''];
    return bytes ? route.fulfill({ body: Buffer.from(bytes) }) : route.fulfill({ status: 404, body: 'not found' });
  });
  await page.goto('./embed.html');
  const run = (target: string, draft: string) =>
    page.evaluate(
      async ([t, d]) => {
        const el = document.querySelector('spec-decoder') as HTMLElement & {
          generate(): Promise<{ tokens: number[] } | null>;
        };
        el.setAttribute('device', 'wasm');
        el.setAttribute('method', 'chain');
        el.setAttribute('max-new-tokens', '4');
        el.setAttribute('target', t as string);
        el.setAttribute('draft', d as string);
        let message = '';
        const onError = (e: Event) => {
          message = (e as CustomEvent<{ message: string }>).detail.message;
        };
        el.addEventListener('error', onError);
        const result = await el.generate();
        el.removeEventListener('error', onError);
        return { ok: result !== null, message };
      },
      [target, draft],
    ) as Promise<Outcome>;
  let refused = 0;
  for (const [i, c] of cases.entries()) {
    const broken = `fuzz/case-${i + 1}/`;
    const outcome = await run(
      c.role === 'target' ? broken : 'fuzz/good-target/',
      c.role === 'draft' ? broken : 'fuzz/good-draft/',
    );
    const what = `case ${i + 1}, ${c.role}: ${c.description}`;
    if (!outcome.ok) {
      refused++;
      expect(outcome.message, what).toMatch(
        new RegExp(`(${c.role} model |vocabulary mismatch|the ${c.role} model produced)`),
      );
      expect(outcome.message.split('\n'), what).toHaveLength(1);
    }
  }
  expect(refused).toBeGreaterThan(5);
  // The element is still usable: a good pair generates.
  expect(await run('fuzz/good-target/', 'fuzz/good-draft/')).toEqual({ ok: true, message: '' });
});
