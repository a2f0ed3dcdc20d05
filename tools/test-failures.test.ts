/**
 * `npm test`'s list of failed unit tests (test-failures.mjs), read from a report this Vitest writes: two test files,
 * one with a failing test inside a describe block, one that throws as it is imported.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a dependency-free .mjs of the set-up, without types
import { unitTestFailuresIn } from './test-failures.mjs';

// The test files resolve `vitest` through a link to the project's node_modules.
const dir = mkdtempSync(join(tmpdir(), 'spec-decoder-test-failures-'));
symlinkSync(resolve('node_modules'), join(dir, 'node_modules'), 'dir');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the summary's failed unit tests", () => {
  it('names each failed test with its file and describe blocks and the first lines of why, and a file that did not load', () => {
    writeFileSync(
      join(dir, 'sums.test.ts'),
      "import { describe, expect, it } from 'vitest';\n" +
        "describe('sums', () => {\n  it('adds', () => expect(1 + 1).toBe(3));\n  it('passes', () => {});\n});\n",
    );
    writeFileSync(join(dir, 'broken.test.ts'), "throw new Error('cannot load the model');\n");
    const report = join(dir, 'report.json');
    const run = spawnSync(
      process.execPath,
      ['node_modules/vitest/vitest.mjs', 'run', '--root', dir, '--reporter=json', `--outputFile.json=${report}`],
      { encoding: 'utf8' },
    );
    expect(run.status, run.stderr).toBe(1);
    const lines: string[] = unitTestFailuresIn(report, dir);
    const at = (re: RegExp) => lines.findIndex((l) => re.test(l));
    expect(lines).toContain('FAIL sums.test.ts > sums > adds');
    expect(lines[at(/^FAIL sums\.test\.ts/) + 1]).toMatch(/^ {5}AssertionError: expected 2 to be 3/);
    expect(lines.some((l) => /node_modules/.test(l))).toBe(false);
    expect(lines).toContain('FAIL broken.test.ts');
    expect(lines[at(/^FAIL broken\.test\.ts/) + 1]).toMatch(/cannot load the model/);
    expect(lines.filter((l) => l.startsWith('FAIL'))).toHaveLength(2);
  });

  it('says so when there is no report (Vitest ended before writing one)', () => {
    expect(unitTestFailuresIn(join(dir, 'none.json'), dir)).toEqual([
      expect.stringMatching(/^\(no Vitest report at .*none\.json: Vitest ended before writing it/),
    ]);
  });
});
