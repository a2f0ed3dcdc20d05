/**
 * An async generator whose result stays: once it has finished, every later next() and return() answers with the
 * same result, where a native one answers `undefined`. engine.cancel() takes the result of a generation it stops
 * between rounds (it asks the iterator itself); a loop that called next() after that read `value` as undefined.
 */
export function keepResult<T, R>(inner: AsyncGenerator<T, R>): AsyncGenerator<T, R> {
  let final: IteratorReturnResult<R> | null = null;
  const settle = (step: IteratorResult<T, R>): IteratorResult<T, R> => {
    if (!step.done) return step;
    // A call queued behind the one that finished the generator gets the same result, not the native undefined.
    final ??= step;
    return final;
  };
  const kept: AsyncGenerator<T, R> = {
    next: (...args: [] | [unknown]) => (final ? Promise.resolve(final) : inner.next(...args).then(settle)),
    return: (value) => (final ? Promise.resolve(final) : inner.return(value).then(settle)),
    throw: (error) => (final ? Promise.reject(error) : inner.throw(error).then(settle)),
    [Symbol.asyncIterator]: () => kept,
  };
  // The native generator's prototype underneath: its Symbol.asyncDispose (`await using`, which calls return()) and
  // its name; the methods above come first.
  Object.setPrototypeOf(kept, Object.getPrototypeOf(inner));
  return kept;
}
