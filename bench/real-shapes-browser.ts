/**
 * Runs the real-shapes benchmark in Chromium (Debian's, --enable-unsafe-webgpu: a SwiftShader adapter on our
 * CPU-only machines) on the Vite dev server, with the generated model folders served under /real-models/.
 */
import { createReadStream, existsSync, statSync } from 'node:fs';
import { join, normalize } from 'node:path';
import { chromium } from '@playwright/test';
import { createServer, type Plugin } from 'vite';
import { CHROMIUM_PATH, WEBGPU_ARGS } from '../e2e/chromium';
import type { ShapeReport } from './real-shapes-core';
import type { BrowserShapeRequest } from './real-shapes-page';

const PORT = 4185;

/** /real-models/<folder>/<file> from the local cache of generated shapes. */
function serveRealModels(root: string): Plugin {
  return {
    name: 'serve-real-models',
    configureServer(server) {
      server.middlewares.use((req, res, next) => {
        const match = /^\/real-models\/([^?]+)/.exec(req.url ?? '');
        if (!match?.[1]) return next();
        const path = normalize(join(root, decodeURIComponent(match[1])));
        if (!path.startsWith(normalize(root)) || !existsSync(path) || statSync(path).isDirectory()) {
          res.statusCode = 404;
          res.end();
          return;
        }
        res.setHeader('Content-Type', path.endsWith('.json') ? 'application/json' : 'application/octet-stream');
        res.setHeader('Content-Length', statSync(path).size);
        createReadStream(path).pipe(res);
      });
    },
  };
}

export async function runInChromium(
  modelsRoot: string,
  requests: BrowserShapeRequest[],
  log: (line: string) => void,
): Promise<(ShapeReport | { error: string })[]> {
  const server = await createServer({
    configFile: 'vite.config.ts',
    plugins: [serveRealModels(modelsRoot)],
    // No file watching or hot reload: an edit elsewhere in the repository must not reload a page mid-measurement.
    server: { port: PORT, strictPort: true, host: '127.0.0.1', hmr: false, watch: null },
    logLevel: 'error',
  });
  await server.listen();
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: WEBGPU_ARGS, headless: true });
  const out: (ShapeReport | { error: string })[] = [];
  try {
    const page = await browser.newPage();
    page.on('console', (m) => {
      if (m.type() === 'log') log(`[browser] ${m.text()}`);
      if (m.type() === 'error' || /WebGPU validation error/i.test(m.text())) log(`[browser ${m.type()}] ${m.text()}`);
    });
    await page.goto(`http://127.0.0.1:${PORT}/bench/real-shapes.html`);
    await page.waitForFunction(() => 'benchRealShape' in window, null, { timeout: 120_000 });
    for (const req of requests) {
      try {
        out.push(
          await page.evaluate(
            (r) =>
              (
                window as unknown as { benchRealShape: (x: BrowserShapeRequest) => Promise<ShapeReport> }
              ).benchRealShape(r),
            req,
          ),
        );
      } catch (e) {
        out.push({ error: (e as Error).message.split('\n')[0] ?? String(e) });
      }
    }
  } finally {
    await browser.close();
    await server.close();
  }
  return out;
}
