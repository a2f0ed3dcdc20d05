import { afterEach, describe, expect, it } from 'vitest';
import { hubEndpoint, resolveUrl } from './hub/id';
import { resolveSource } from './source';

describe('resolveSource', () => {
  afterEach(() => {
    delete process.env.HF_ENDPOINT;
  });

  it('maps hf:org/name[@rev] to the hub, URLs to themselves, other strings to folders', () => {
    expect(resolveSource('hf:HuggingFaceTB/SmolLM2-135M').location).toBe('hf:HuggingFaceTB/SmolLM2-135M@main');
    expect(resolveSource('hf:Qwen/Qwen2.5-0.5B@v1.0').location).toBe('hf:Qwen/Qwen2.5-0.5B@v1.0');
    expect(resolveSource('https://example.org/m/').location).toBe('https://example.org/m/');
    expect(resolveSource('public/models/austen-target').location).toBe('public/models/austen-target');
    expect(resolveSource('models/x/', 'http://127.0.0.1:4173/app/').location).toBe(
      'http://127.0.0.1:4173/app/models/x/',
    );
    expect(() => resolveSource('hf:not a repo')).toThrow(/bad hub id/);
    expect(() => resolveSource('hf:a/b@../../etc')).toThrow(/bad hub id/);
    // The hub's ids without an organisation (gpt2, distilgpt2) are ids too; a third part or a leading dash is not.
    expect(resolveSource('hf:gpt2').location).toBe('hf:gpt2@main');
    expect(resolveSource('hf:distilgpt2@v1').location).toBe('hf:distilgpt2@v1');
    expect(() => resolveSource('hf:a/b/c')).toThrow(/bad hub id "hf:a\/b\/c": expected hf:org\/name, hf:name/);
    expect(() => resolveSource('hf:-x')).toThrow(/bad hub id/);
    expect(() => resolveSource('hf:org/x.')).toThrow(/bad hub id/);
  });

  it('the hub host: the option, else HF_ENDPOINT, else huggingface.co (as transformers.js builds resolve URLs)', () => {
    expect(hubEndpoint()).toBe('https://huggingface.co');
    expect(resolveUrl(hubEndpoint(), 'org/m', 'main', 'config.json')).toBe(
      'https://huggingface.co/org/m/resolve/main/config.json',
    );
    process.env.HF_ENDPOINT = 'http://mirror.local:8080/';
    expect(hubEndpoint()).toBe('http://mirror.local:8080');
    expect(resolveSource('hf:org/m').location).toBe('hf:org/m@main on http://mirror.local:8080');
    expect(hubEndpoint('http://other/')).toBe('http://other');
    expect(resolveUrl('http://h', 'org/m', 'refs/pr/1', 'a b.json')).toBe(
      'http://h/org/m/resolve/refs%2Fpr%2F1/a%20b.json',
    );
  });
});
