/**
 * Setting one top-level key of a JSON object's text while keeping every other byte as written: a JSON round trip
 * would write 10000.0 as 10000 (transformers' checks of rope_scaling refuse an integer factor) and round integers past
 * 2^53 in a model's config.json.
 */

/** Where the JSON string opening at `i` closes (the index of its closing quote). */
function stringEnd(text: string, i: number): number {
  let j = i + 1;
  while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
  return j;
}

/**
 * Where a top-level key's value lies in a JSON object's text ([start, end) of the value), or null where the key is
 * absent. A small scanner, so that the rest of the text is kept byte for byte: the value ends at the comma or brace
 * that follows it at the top level.
 */
export function valueSpan(text: string, key: string): { start: number; end: number } | null {
  let depth = 0;
  let expectKey = false;
  let start = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (start >= 0 && depth === 1 && (c === ',' || c === '}')) {
      let end = i;
      while (end > start && /\s/.test(text[end - 1] as string)) end--;
      return { start, end };
    }
    if (c === '"') {
      const j = stringEnd(text, i);
      if (start < 0 && depth === 1 && expectKey && JSON.parse(text.slice(i, j + 1)) === key) {
        start = text.indexOf(':', j + 1) + 1;
        while (/\s/.test(text[start] as string)) start++;
        i = start - 1; // on from the value's first character
      } else i = j;
      expectKey = false;
    } else if (c === '{' || c === '[') {
      depth++;
      expectKey = depth === 1 && c === '{';
    } else if (c === '}' || c === ']') depth--;
    else if (c === ',' && depth === 1) expectKey = true;
  }
  return null;
}

/** The text with `key` set to `value` (replaced where it is there, added last where not), two-space indented. */
export function setKey(text: string, key: string, value: unknown): string {
  const parsed = JSON.parse(text) as unknown;
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new Error('config.json is not a JSON object');
  const json = JSON.stringify(value, null, 2).replace(/\n/g, '\n  ');
  const span = valueSpan(text, key);
  if (span) return text.slice(0, span.start) + json + text.slice(span.end);
  const close = text.lastIndexOf('}');
  const before = text.slice(0, close).trimEnd();
  return `${before}${before.endsWith('{') ? '' : ','}\n  ${JSON.stringify(key)}: ${json}\n}${text.slice(close + 1)}`;
}
