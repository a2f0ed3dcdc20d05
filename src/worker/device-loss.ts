/**
 * Which failures a lost GPU device might explain. After a failure the worker waits briefly for the device's lost
 * promise (onnxruntime's own error can come first), so that the device-lost message, not a failed buffer download,
 * is what the user reads. A request refused for what it asked (an option out of range, a method the engine was not
 * loaded for, a prompt over the context, a second request while one runs) touched no GPU: it is answered at once.
 */
import { EngineBusyError, MethodUnavailableError } from '../engine/engine';
import { GenerationError } from '../engine/events';
import { ContextLimitError } from '../engine/lm';

function refusedInput(e: unknown): boolean {
  const error = e instanceof GenerationError ? e.cause : e;
  return (
    error instanceof RangeError ||
    error instanceof EngineBusyError ||
    error instanceof MethodUnavailableError ||
    error instanceof ContextLimitError
  );
}

/** Whether `device` was lost, waiting up to `ms` for it, or at once false where the failure was refused input. */
export async function deviceWasLost(
  device: Pick<GPUDevice, 'lost'> | null,
  failure: unknown,
  ms = 250,
): Promise<boolean> {
  if (!device || refusedInput(failure)) return false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([device.lost.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}
