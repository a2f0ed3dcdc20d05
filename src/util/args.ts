/**
 * Command-line helpers shared by the CLI and the benchmark. Node's parseArgs reads `--temperature -1` as an
 * ambiguous option and answers with a three-line message; joining a negative number onto its flag
 * (`--temperature=-1`) lets our own validation say what is wrong in one line.
 */
export function joinNegativeValues(argv: readonly string[], valueFlags: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    const next = argv[i + 1];
    if (valueFlags.has(a) && next !== undefined && /^-[0-9.]/.test(next)) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

/** The first line of an error message (parseArgs adds hints on further lines). */
export const firstLine = (message: string): string => message.split('\n')[0] ?? message;
