/** The engine as a chat: messages through the target's chat template (transformers.js), same tokens as the text. */
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ortForNode } from '../runtime/ort-node';
import { SpecEngine } from './engine';
import { GREEDY } from './sampling';

const fixture = JSON.parse(readFileSync('tests/fixtures/chat-templates.json', 'utf8'));

/** The bundled draft with the fixture's chat template in tokenizer_config.json. */
function chatModel(): string {
  const src = 'public/models/austen-draft';
  const dir = mkdtempSync(join(tmpdir(), 'spec-chat-'));
  for (const f of ['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json'])
    copyFileSync(join(src, f), join(dir, f));
  const config = JSON.parse(readFileSync(join(src, 'tokenizer_config.json'), 'utf8'));
  writeFileSync(
    join(dir, 'tokenizer_config.json'),
    JSON.stringify({ ...config, chat_template: fixture.austen.template }),
  );
  return dir;
}

let engine: SpecEngine;
beforeAll(async () => {
  engine = await SpecEngine.load(ortForNode(), { target: chatModel(), device: 'wasm' });
});
afterAll(() => engine?.release());

async function tokens(prompt: Parameters<SpecEngine['generate']>[0]): Promise<number[]> {
  const it = engine.generate(prompt, { method: 'ar', maxNewTokens: 8, sampling: GREEDY });
  let step = await it.next();
  while (!step.done) step = await it.next();
  return step.value.tokens;
}

describe('chat through the engine', () => {
  it('formatChat gives the template prompt, and generate({messages}) continues exactly that prompt', async () => {
    expect(engine.formatChat(fixture.messages)).toBe(fixture.austen.expected);
    const ids = engine.tokenizer.encode(fixture.austen.expected, { addSpecialTokens: false });
    expect(await tokens({ messages: fixture.messages })).toEqual(await tokens(ids));
  });

  it('a model without a chat template says so', async () => {
    const plain = await SpecEngine.load(ortForNode(), { target: 'public/models/austen-draft', device: 'wasm' });
    try {
      const it = plain.generate({ messages: fixture.messages }, { method: 'ar', maxNewTokens: 2, sampling: GREEDY });
      await expect(it.next()).rejects.toThrow(/no chat template \(tokenizer_config\.json chat_template\)/);
      // and it stays usable
      const again = plain.generate('It is', { method: 'ar', maxNewTokens: 2, sampling: GREEDY });
      expect((await again.next()).done).toBe(false);
    } finally {
      await plain.release();
    }
  });
});
