/** Where a page built by this project serves onnxruntime-web's wasm files: `ort/` beside index.html. */
export function defaultOrtBase(baseUri: string): string {
  return new URL('ort/', baseUri).href;
}
