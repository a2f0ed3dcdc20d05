/** Main-thread side of the self-tests: each runs in a fresh module worker and resolves with its report. */
import type { SelftestMessage, SelftestReport, SelftestRequest } from './selftest-protocol';
import type { TreeCheckReport } from './tree-check';

function inWorker(request: SelftestRequest): Promise<SelftestMessage> {
  const worker = new Worker(new URL('./selftest-worker.ts', import.meta.url), { type: 'module' });
  return new Promise<SelftestMessage>((resolve, reject) => {
    worker.onmessage = (event: MessageEvent<SelftestMessage>) => {
      const msg = event.data;
      if (msg.type === 'error') reject(new Error(`self-test worker failed: ${msg.error}`));
      else resolve(msg);
    };
    worker.onerror = (event) => reject(new Error(`self-test worker crashed: ${event.message || 'unknown error'}`));
    worker.postMessage(request);
  }).finally(() => worker.terminate());
}

export async function runSelftest(ortBase: string): Promise<SelftestReport> {
  const msg = await inWorker({ kind: 'ops', ortBase });
  if (msg.type !== 'report') throw new Error(`unexpected self-test reply ${msg.type}`);
  return msg.report;
}

export async function runTreeCheck(
  ortBase: string,
  models: string[],
  device: 'webgpu' | 'wasm',
  base: string,
  options: {
    graph?: 'plain' | 'fused' | 'hybrid';
    precision?: 'auto' | 'fp32' | 'fp16' | 'int4' | 'int8';
    exact?: boolean;
  } = {},
): Promise<TreeCheckReport[]> {
  const msg = await inWorker({ kind: 'tree', ortBase, models, device, base, ...options });
  if (msg.type !== 'tree') throw new Error(`unexpected self-test reply ${msg.type}`);
  return msg.reports;
}
