import { expect, test } from './fixtures';

interface Row {
  method: string;
  prompt: number;
  round: number;
  tokens: number;
  width: number;
}

// bench --trace on a Chromium backend: the bench worker posts every round of the timed generations back through the
// page (the driver hands them to the trace file). A tiny run on wasm: its rounds must come back, in order, and add up
// to each generation's tokens.
test('the bench page passes every round of its worker back to a trace', async ({ page }) => {
  test.setTimeout(180_000);
  await page.goto('./bench.html');
  const { rows, cells } = await page.evaluate(async () => {
    const w = window as unknown as {
      benchmark: (
        d: string,
        o: unknown,
        log: (l: string) => void,
        onRound?: (row: Row) => void,
      ) => Promise<{ cells: { method: string; runs: number; tau: number; targetCalls: number }[] }>;
    };
    const rows: Row[] = [];
    const report = await w.benchmark(
      'wasm',
      {
        prompts: [{ kind: 'x', text: 'It is a truth universally acknowledged' }],
        methods: ['chain'],
        maxNewTokens: 6,
        repeats: 1,
        curveQs: [1, 2],
        curveReps: 1,
      },
      () => {},
      (row) => rows.push(row),
    );
    return { rows, cells: report.cells };
  });
  expect(cells.map((c) => c.method)).toEqual(['ar', 'chain']);
  for (const method of ['ar', 'chain']) {
    const mine = rows.filter((r) => r.method === method && r.prompt === 0);
    expect(mine.map((r) => r.round)).toEqual(mine.map((_, i) => i));
    expect(mine.reduce((a, r) => a + r.tokens, 0)).toBe(6);
  }
  const chain = cells[1] as { tau: number };
  const chainRows = rows.filter((r) => r.method === 'chain');
  expect(6 / chainRows.length).toBeCloseTo(chain.tau, 5);
});
