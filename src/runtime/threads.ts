/**
 * The wasm thread counts this project runs onnxruntime with, checked in one place (the CLI's --threads, the element's
 * threads attribute, EngineClient.load, ortForNode): onnxruntime takes any number and runs one thread for what it
 * cannot use, while the runtime report would say the number given.
 */
export const MAX_WASM_THREADS = 64;

export const isThreadCount = (n: unknown): n is number =>
  Number.isInteger(n) && (n as number) >= 1 && (n as number) <= MAX_WASM_THREADS;
