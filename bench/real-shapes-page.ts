/** The real-shapes benchmark in a browser page: the Node driver calls window.benchRealShape with a request. */
import { ortForWeb } from '../src/runtime/ort-web';
import { type BenchShapeOptions, benchShape, type CellSpec, type ShapeReport } from './real-shapes-core';

export interface BrowserShapeRequest {
  /** The model folder, relative to the page. */
  model: string;
  device: 'wasm' | 'webgpu';
  cells: CellSpec[];
  options: Omit<BenchShapeOptions, 'log' | 'base'>;
}

const logEl = document.getElementById('log') as HTMLPreElement;

(window as unknown as { benchRealShape: (r: BrowserShapeRequest) => Promise<ShapeReport> }).benchRealShape = async (
  req,
) => {
  const ort = ortForWeb(new URL('/ort/', document.baseURI).href);
  return benchShape(ort, req.model, req.device, req.cells, {
    ...req.options,
    base: document.baseURI,
    log: (line) => {
      console.log(line);
      logEl.textContent += `${line}\n`;
    },
  });
};
