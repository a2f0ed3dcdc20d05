/** A model that cannot be loaded or built: the message names the file and the cause. */
export class ModelLoadError extends Error {
  override name = 'ModelLoadError';
}

/** A file that could not be fetched: HTTP status, the hub's error code (X-Error-Code) when it sent one. */
export class DownloadError extends ModelLoadError {
  override name = 'DownloadError';
  constructor(
    message: string,
    readonly details: { status?: number; code?: string; network?: boolean } = {},
  ) {
    super(message);
  }
}
