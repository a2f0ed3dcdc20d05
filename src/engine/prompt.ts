/**
 * What a generation takes as its prompt: text, token ids (an array, or a typed array), or { messages } for the
 * target's chat template. Checked by the engine and, before anything is posted to its worker, by the browser client.
 */
import { shown } from '../util/options';

export function checkPromptShape(prompt: unknown): void {
  const messages = typeof prompt === 'object' && prompt !== null && 'messages' in prompt;
  const ok =
    typeof prompt === 'string' ||
    Array.isArray(prompt) ||
    prompt instanceof Int32Array ||
    prompt instanceof Uint32Array ||
    prompt instanceof Int16Array ||
    prompt instanceof Uint16Array ||
    prompt instanceof Uint8Array ||
    prompt instanceof Int8Array ||
    messages;
  if (!ok) {
    // BigInt64Array's ids were reported as out of the vocabulary, a DataView failed as "not iterable".
    const what = ArrayBuffer.isView(prompt) ? `a ${prompt.constructor.name}` : String(prompt);
    throw new TypeError(
      `the prompt must be text, an array of token ids (an Array or an integer typed array such as Int32Array) or { messages }; got ${what}`,
    );
  }
  if (messages) checkMessages((prompt as { messages: unknown }).messages);
}

/** A chat: a non-empty array of { role, content } with text in both (the chat template takes nothing else). */
function checkMessages(messages: unknown): void {
  if (!Array.isArray(messages) || messages.length === 0)
    throw new TypeError(
      `messages must be a non-empty array of { role, content }; got ${Array.isArray(messages) ? 'an empty array' : shown(messages)}`,
    );
  messages.forEach((m, i) => {
    const role = (m as { role?: unknown } | null)?.role;
    const content = (m as { content?: unknown } | null)?.content;
    if (typeof role !== 'string' || role === '' || typeof content !== 'string')
      throw new TypeError(`message ${i} must be { role, content } with text in both; got ${shown(m)}`);
  });
}
