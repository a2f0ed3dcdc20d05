import { describe, expect, it } from 'vitest';
import { resolveSource } from './source';

describe('resolveSource', () => {
  it('maps hf:org/name[@rev] to the hub, URLs to themselves, other strings to folders', () => {
    expect(resolveSource('hf:HuggingFaceTB/SmolLM2-135M').location).toBe(
      'https://huggingface.co/HuggingFaceTB/SmolLM2-135M/resolve/main/',
    );
    expect(resolveSource('hf:Qwen/Qwen2.5-0.5B@v1.0').location).toBe(
      'https://huggingface.co/Qwen/Qwen2.5-0.5B/resolve/v1.0/',
    );
    expect(resolveSource('https://example.org/m/').location).toBe('https://example.org/m/');
    expect(resolveSource('public/models/austen-target').location).toBe('public/models/austen-target');
    expect(resolveSource('models/x/', 'http://127.0.0.1:4173/app/').location).toBe(
      'http://127.0.0.1:4173/app/models/x/',
    );
    expect(() => resolveSource('hf:not a repo')).toThrow(/bad hub id/);
  });
});
