/** A model that cannot be loaded or built: the message names the file and the cause. */
export class ModelLoadError extends Error {
  override name = 'ModelLoadError';
}
