/** Checks of options given as values (library calls, the worker's messages), each refusal one line naming the option. */

/**
 * A value as an error line shows it: as JSON (strings quoted), else as String() would (undefined, a function), and a
 * value JSON cannot write (a BigInt, a cycle) the same way instead of JSON's own error in place of the line's.
 */
export function shown(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** An option that is true or false (or left out); anything else is refused naming it. */
export function checkBoolean(option: string, value: unknown): void {
  if (value !== undefined && typeof value !== 'boolean')
    throw new TypeError(`${option} must be true or false; got ${shown(value)}`);
}
