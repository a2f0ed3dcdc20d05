/**
 * Let the host's event loop run: timers, I/O and messages (a cancel, an abort timer) get their turn. onnxruntime's
 * wasm sessions resolve without leaving the microtask queue, so a generation that only awaits model calls would
 * otherwise hold the event loop for its whole run. DOM-free: Node has setImmediate, browsers and workers
 * MessageChannel (no timer clamping either way).
 */
export function nextMacrotask(): Promise<void> {
  if (typeof setImmediate === 'function') return new Promise((resolve) => setImmediate(resolve));
  if (typeof MessageChannel === 'function') {
    return new Promise((resolve) => {
      const channel = new MessageChannel();
      channel.port1.onmessage = () => {
        channel.port1.close();
        resolve();
      };
      channel.port2.postMessage(null);
    });
  }
  return new Promise((resolve) => setTimeout(resolve, 0));
}
