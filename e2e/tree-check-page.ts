/**
 * The page's tree check (diagnostics panel), driven as a user would: pick the device, models, graph and precision,
 * run it, wait for the result; returns the reports (asserted present, the page's text as the message) and the text.
 */
import type { Page } from '@playwright/test';
import type { TreeCheckReport } from '../src/diagnostics/tree-check';
import { expect } from './fixtures';

export interface PageTreeCheck {
  device: 'webgpu' | 'wasm';
  models: 'draft' | 'both';
  graph?: 'plain' | 'fused' | 'hybrid';
  precision?: 'auto' | 'fp32' | 'int4' | 'int8';
  /** How long the check may take, in ms. */
  timeout: number;
}

export async function runPageTreeCheck(
  page: Page,
  o: PageTreeCheck,
): Promise<{ reports: TreeCheckReport[]; text: string }> {
  await page.locator('details.diagnostics > summary').click();
  await page.getByTestId('tree-device').selectOption(o.device);
  await page.getByTestId('tree-models').selectOption(o.models);
  if (o.graph) await page.getByTestId('tree-graph').selectOption(o.graph);
  if (o.precision) await page.getByTestId('tree-precision').selectOption(o.precision);
  await page.getByTestId('tree-run').click();
  await expect(page.locator('body')).toHaveAttribute('data-treecheck', /done|error/, { timeout: o.timeout });
  const text = (await page.getByTestId('tree-result').textContent()) ?? '';
  const reports = await page.evaluate(
    () => (window as unknown as { treeCheckReports?: TreeCheckReport[] }).treeCheckReports,
  );
  expect(reports, text).toBeDefined();
  return { reports: reports ?? [], text };
}
