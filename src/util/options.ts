/** Checks of options given as values (library calls, the worker's messages), each refusal one line naming the option. */

/** An option that is true or false (or left out); anything else is refused naming it. */
export function checkBoolean(option: string, value: unknown): void {
  if (value !== undefined && typeof value !== 'boolean')
    throw new TypeError(`${option} must be true or false; got ${JSON.stringify(value) ?? String(value)}`);
}
