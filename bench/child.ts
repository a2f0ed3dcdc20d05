/**
 * The benchmark's fresh processes (cold, memory, the CLI check) each print one JSON line last: reading it, and
 * running a bench script under tsx for it.
 */
import { execFileSync } from 'node:child_process';

/** The JSON object on the last line of a process's output. */
export function lastJsonLine<T>(stdout: string): T {
  return JSON.parse(stdout.trim().split('\n').at(-1) as string) as T;
}

/** Run `tsx <script> …args` in a fresh process and return its last JSON line (stderr shown or dropped). */
export function tsxJson<T>(
  script: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  stderr: 'inherit' | 'ignore',
): T {
  const out = execFileSync('node_modules/.bin/tsx', [script, ...args], {
    encoding: 'utf8',
    env,
    stdio: ['ignore', 'pipe', stderr],
  });
  return lastJsonLine<T>(out);
}
