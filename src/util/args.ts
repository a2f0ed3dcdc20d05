/**
 * Command-line helpers shared by the CLI and the benchmark. Node's parseArgs reads `--temperature -1` as an
 * ambiguous option and answers with a three-line message; joining a negative number onto its flag
 * (`--temperature=-1`) lets our own validation say what is wrong in one line. A flag of free text (`--prompt`)
 * takes the next argument whatever it starts with (`--prompt '- a list item'`, `--prompt '--she said'`), unless that
 * is one of the command's own flags (`knownFlags`: then the text is missing, and parseArgs says so).
 */
export function joinNegativeValues(
  argv: readonly string[],
  valueFlags: ReadonlySet<string>,
  textFlags: ReadonlySet<string> = new Set(),
  knownFlags: ReadonlySet<string> = valueFlags,
): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    const next = argv[i + 1];
    const text = textFlags.has(a) && next?.startsWith('-') && !knownFlags.has(next.split('=')[0] as string);
    if (valueFlags.has(a) && next !== undefined && (text || /^-[0-9.]/.test(next))) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

/** The first line of an error message (parseArgs adds hints on further lines). */
export const firstLine = (message: string): string => message.split('\n')[0] ?? message;

const INTEGER = /^[-+]?[0-9]+$/;
const DECIMAL = /^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$/;

/**
 * A flag's decimal number (or safe integer): `fallback` when absent, otherwise the value or the error `fail` makes of
 * a one-line message naming the flag (no hex, no Infinity, nothing past Number.MAX_SAFE_INTEGER for integers).
 */
export function numberFlag(
  name: string,
  raw: string | undefined,
  fallback: number,
  integer: boolean,
  fail: (message: string) => Error,
): number {
  if (raw === undefined) return fallback;
  const text = raw.trim();
  const v = Number(text);
  if (integer) {
    if (!INTEGER.test(text)) throw fail(`--${name} expects a whole number, got "${raw}"`);
    if (!Number.isSafeInteger(v)) throw fail(`--${name} ${raw} is too large (at most ${Number.MAX_SAFE_INTEGER})`);
    return v;
  }
  if (!DECIMAL.test(text) || !Number.isFinite(v)) throw fail(`--${name} expects a number, got "${raw}"`);
  return v;
}
