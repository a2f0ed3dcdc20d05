/**
 * bench --trace FILE: every round of the timed generations as JSON lines, on every backend (Chromium's come back from
 * the bench worker through the page) and in the GPU kit. The report's totals say how many rounds each of auto's arms
 * ran; the trace says when, what each brought, what it cost, and why auto chose it (its note), which is what a wrong
 * choice is diagnosed from.
 */
import { appendFileSync, writeFileSync } from 'node:fs';
import type { TraceRow } from './harness';

/**
 * Appends rows to `path` (emptied first), buffered, each with the backend it ran on (`rounds(backend)`); `flush` writes
 * what is left.
 */
export function traceWriter(path: string): { rounds: (backend: string) => (row: TraceRow) => void; flush: () => void } {
  writeFileSync(path, '');
  let lines: string[] = [];
  const flush = () => {
    if (lines.length === 0) return;
    appendFileSync(path, lines.join(''));
    lines = [];
  };
  return {
    rounds: (backend) => (row) => {
      lines.push(`${JSON.stringify({ backend, ...row })}\n`);
      // At a generation's first round: a run cut short (a time limit) keeps the generations it finished.
      if (row.round === 0 || lines.length >= 256) flush();
    },
    flush,
  };
}
