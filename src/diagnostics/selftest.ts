/** Main-thread side of the self-test: spawns the module worker and resolves with its report. */
import type { SelftestMessage, SelftestReport } from './selftest-protocol';

export function runSelftest(ortBase: string): Promise<SelftestReport> {
  const worker = new Worker(new URL('./selftest-worker.ts', import.meta.url), { type: 'module' });
  return new Promise<SelftestReport>((resolve, reject) => {
    worker.onmessage = (event: MessageEvent<SelftestMessage>) => {
      const msg = event.data;
      if (msg.type === 'report') resolve(msg.report);
      else reject(new Error(`self-test worker failed: ${msg.error}`));
    };
    worker.onerror = (event) => reject(new Error(`self-test worker crashed: ${event.message || 'unknown error'}`));
    worker.postMessage({ ortBase });
  }).finally(() => worker.terminate());
}
