/**
 * What a generation takes as its prompt: text, token ids (an array, or a typed array), or { messages } for the
 * target's chat template. Checked by the engine and, before anything is posted to its worker, by the browser client.
 */
export function checkPromptShape(prompt: unknown): void {
  const ok =
    typeof prompt === 'string' ||
    Array.isArray(prompt) ||
    ArrayBuffer.isView(prompt) ||
    (typeof prompt === 'object' && prompt !== null && 'messages' in prompt);
  if (!ok) throw new TypeError(`the prompt must be text, an array of token ids or { messages }; got ${String(prompt)}`);
}
