/** The CLI's chat flags: --chat sends the prompt as a user message through the chat template, --system before it. */
import { describe, expect, it, vi } from 'vitest';
import { main, parseCli } from './cli';

describe('cli --chat / --system', () => {
  it('parses --chat and --system, and refuses --system alone', () => {
    expect(parseCli(['--prompt', 'Hi', '--chat', '--system', 'Be brief.'])).toMatchObject({
      chat: true,
      system: 'Be brief.',
    });
    expect(parseCli(['--prompt', 'Hi'])).toMatchObject({ chat: false });
    expect(() => parseCli(['--prompt', 'Hi', '--system', 'x'])).toThrow(/--system needs --chat/);
  });

  it('a model without a chat template gives one readable error line and exit code 2', async () => {
    const errors: string[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((m: string) => errors.push(m));
    const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      const code = await main(['--prompt', 'Hi', '--chat', '--method', 'ar', '--max-new-tokens', '2', '--json']);
      expect(code).toBe(2);
      expect(errors.join('\n')).toMatch(
        /error: this model has no chat template \(tokenizer_config\.json chat_template\)/,
      );
    } finally {
      spy.mockRestore();
      write.mockRestore();
    }
  });
});
