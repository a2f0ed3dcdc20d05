/**
 * The failed unit tests, said again under `npm test`'s summary: CI keeps only the end of a run's output, and the
 * browser tests print 13 minutes of lines after Vitest's own report of its failures (a failed run on CI showed
 * "FAIL unit tests" and nothing of which). Reads Vitest's JSON report (`--reporter=json`). Node's standard library
 * only, as bootstrap.mjs.
 */
import { existsSync, readFileSync } from 'node:fs';
import { relative } from 'node:path';

/** Lines of a failure's message kept (its first lines: the assertion and where it failed). */
const MESSAGE_LINES = 6;

/** The first lines of a failure message, its stack frames inside node_modules left out. */
function shortMessage(message) {
  return message
    .split('\n')
    .filter((line) => !/^\s+at .*node_modules/.test(line) && !/^\s+at new Promise/.test(line))
    .slice(0, MESSAGE_LINES);
}

/**
 * What failed in a Vitest JSON report, a few lines each: every failed test (file, its describe blocks and title, the
 * first lines of its first failure) and every file that failed outside its tests (an import or a hook). Empty when
 * nothing failed.
 */
export function unitTestFailures(report, root) {
  const lines = [];
  for (const file of report.testResults ?? []) {
    const name = relative(root, file.name);
    const failed = (file.assertionResults ?? []).filter((t) => t.status === 'failed');
    for (const test of failed) {
      lines.push(`FAIL ${name} > ${[...(test.ancestorTitles ?? []), test.title].join(' > ')}`);
      for (const line of shortMessage(test.failureMessages?.[0] ?? '')) lines.push(`     ${line}`);
    }
    if (file.status === 'failed' && failed.length === 0)
      for (const line of [`FAIL ${name}`, ...shortMessage(file.message || '(no message)').map((l) => `     ${l}`)])
        lines.push(line);
  }
  return lines;
}

/** The failures in the report at `path`, or one line saying there is no report to read. */
export function unitTestFailuresIn(path, root) {
  if (!existsSync(path)) return [`(no Vitest report at ${path}: Vitest ended before writing it; see above)`];
  try {
    return unitTestFailures(JSON.parse(readFileSync(path, 'utf8')), root);
  } catch (e) {
    return [`(Vitest's report at ${path} could not be read: ${e?.message ?? e})`];
  }
}
