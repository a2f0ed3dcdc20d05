/**
 * One onnxruntime call at a time per onnxruntime instance. onnxruntime-web's wasm `run` takes scratch memory on a
 * stack all its sessions share and holds it across its awaits, so two calls that overlap (two engines in one Node
 * process, generating or loading at the same time) corrupted each other: "failed to call OrtRun()", a TypeError
 * inside onnxruntime, or the process frozen for good. Every session this project creates goes through
 * createSession(), whose sessions queue their run() and release() behind every other call on the same onnxruntime;
 * creating a session queues too. One engine's calls were sequential already: the queue costs it a promise a call.
 */
import type * as OrtModule from 'onnxruntime-web';

type Ort = Pick<typeof OrtModule, 'InferenceSession'>;

const queues = new WeakMap<object, Promise<unknown>>();

/** Run `work` once every earlier call queued on this onnxruntime has settled (whatever their outcome). */
export function exclusive<T>(ort: object, work: () => Promise<T>): Promise<T> {
  const before = queues.get(ort) ?? Promise.resolve();
  const mine = before.then(work);
  queues.set(
    ort,
    mine.catch(() => undefined),
  );
  return mine;
}

/** InferenceSession.create, queued, with run() and release() queued behind every other call on `ort`. */
export async function createSession(
  ort: Ort,
  model: Uint8Array,
  options: OrtModule.InferenceSession.SessionOptions,
): Promise<OrtModule.InferenceSession> {
  const session = await exclusive(ort, () => ort.InferenceSession.create(model, options));
  const run = session.run.bind(session) as (...args: unknown[]) => Promise<OrtModule.InferenceSession.ReturnType>;
  const release = session.release.bind(session);
  Object.assign(session, {
    run: (...args: unknown[]) => exclusive(ort, () => run(...args)),
    release: () => exclusive(ort, release),
  });
  return session;
}
