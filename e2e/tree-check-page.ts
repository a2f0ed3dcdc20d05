/**
 * The page's tree check (diagnostics panel), driven as a user would: pick the device, models, graph, precision and
 * exact decoding, run it, wait for the result; returns the reports (asserted present unless `failing`, the page's
 * text as the message) and the text.
 */
import type { Page } from '@playwright/test';
import type { TreeCheckReport } from '../src/diagnostics/tree-check';
import { expect } from './fixtures';

export interface PageTreeCheck {
  device: 'webgpu' | 'wasm';
  models: 'draft' | 'both';
  graph?: 'plain' | 'fused' | 'hybrid';
  precision?: 'auto' | 'fp32' | 'fp16' | 'int4' | 'int8';
  exact?: boolean;
  /** The check is expected to fail (its error is the text). */
  failing?: boolean;
  /** How long the check may take, in ms. */
  timeout: number;
}

export async function runPageTreeCheck(
  page: Page,
  o: PageTreeCheck,
): Promise<{ reports: TreeCheckReport[]; text: string }> {
  // Open the panel (a second check finds it open already).
  if (!(await page.locator('details.diagnostics').evaluate((d) => (d as HTMLDetailsElement).open)))
    await page.locator('details.diagnostics > summary').click();
  await page.getByTestId('tree-device').selectOption(o.device);
  await page.getByTestId('tree-models').selectOption(o.models);
  if (o.graph) await page.getByTestId('tree-graph').selectOption(o.graph);
  if (o.precision) await page.getByTestId('tree-precision').selectOption(o.precision);
  await page.getByTestId('tree-exact').setChecked(o.exact === true);
  await page.getByTestId('tree-run').click();
  await expect(page.locator('body')).toHaveAttribute('data-treecheck', /done|error/, { timeout: o.timeout });
  const text = (await page.getByTestId('tree-result').textContent()) ?? '';
  if (o.failing) {
    await expect(page.locator('body'), text).toHaveAttribute('data-treecheck', 'error');
    return { reports: [], text };
  }
  const reports = await page.evaluate(
    () => (window as unknown as { treeCheckReports?: TreeCheckReport[] }).treeCheckReports,
  );
  expect(reports, text).toBeDefined();
  return { reports: reports ?? [], text };
}
