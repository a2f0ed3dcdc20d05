/**
 * The npm package as a user gets it: `npm pack` of the built repository, installed into an empty folder, then used
 * from Node (`import { SpecEngine, ortForNode } from 'spec-decoder'`: the engine, no DOM) and from a browser page
 * (the element from the package's browser entry, served from the installed folder).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { extname, join, resolve } from 'node:path';
import { expect, test } from './fixtures';

const ROOT = resolve(import.meta.dirname, '..');
let app = '';

test.beforeAll(() => {
  test.setTimeout(300_000);
  const dir = mkdtempSync(join(tmpdir(), 'spec-decoder-pkg-'));
  // The webServer built dist/ already (npm run build): pack exactly what "files" ships (--ignore-scripts: without the
  // prepack build a user's `npm pack` runs, which would rebuild the dist/ the webServer is serving).
  const tarball = execFileSync('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', dir], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .trim()
    .split('\n')
    .pop() as string;
  app = join(dir, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  // transformers.js's optional onnxruntime-node would fetch binaries from a host we cannot reach.
  writeFileSync(join(app, '.npmrc'), 'onnxruntime-node-install=skip\n');
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', join(dir, tarball)], {
    cwd: app,
    env: { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip' },
    stdio: 'ignore',
  });
});

test('the packed package works from Node: engine and model layer under the node export condition', () => {
  const script = `
    import { SpecEngine, ortForNode, METHOD_NAMES, FileStore } from 'spec-decoder';
    const engine = await SpecEngine.load(ortForNode(), {
      target: ${JSON.stringify(join(ROOT, 'public/models/austen-target'))},
      draft: ${JSON.stringify(join(ROOT, 'public/models/austen-draft'))},
      device: 'wasm',
      // The CLI's record file, as the README suggests for the same sampled text across processes.
      store: new FileStore(${JSON.stringify(join(app, 'records.json'))}),
    });
    const out = {};
    for (const method of ['ar', 'lookup', 'chain']) {
      const it = engine.generate('She was', { method, maxNewTokens: 6, sampling: { temperature: 0, topK: 0, topP: 1, seed: 0 } });
      let s = await it.next();
      while (!s.done) s = await it.next();
      out[method] = s.value.tokens;
    }
    await engine.release();
    console.log(JSON.stringify({ out, methods: METHOD_NAMES, dom: typeof HTMLElement }));`;
  const printed = execFileSync('node', ['--input-type=module', '-e', script], { cwd: app, encoding: 'utf8' });
  const { out, methods, dom } = JSON.parse(printed.trim().split('\n').pop() as string);
  expect(dom).toBe('undefined');
  expect(methods).toContain('lookup');
  expect(out.ar).toHaveLength(6);
  expect(out.lookup).toEqual(out.ar);
  expect(out.chain).toEqual(out.ar);
  // The measured costs went into the record file.
  expect(Object.keys(JSON.parse(readFileSync(join(app, 'records.json'), 'utf8')))).toContainEqual(
    expect.stringMatching(/^costs:/),
  );
  // Types ship with both entries.
  const pkg = join(app, 'node_modules', 'spec-decoder');
  expect(existsSync(join(pkg, 'dist/lib/types/node.d.ts'))).toBe(true);
  expect(existsSync(join(pkg, 'dist/lib/types/index.d.ts'))).toBe(true);
});

test('the packed types check as a user compiles them: Node on nodenext, the element typed on bundler', () => {
  // Node ESM rules (nodenext), library checking on: the declarations resolve, and the API is typed (the last line
  // must be refused), not any. The element's events are typed in HTMLElementEventMap once it is imported.
  const write = (dir: string, code: string, options: Record<string, unknown>) => {
    mkdirSync(join(app, dir), { recursive: true });
    writeFileSync(join(app, dir, 'use.ts'), code);
    const compilerOptions = { target: 'es2022', strict: true, noEmit: true, skipLibCheck: false, ...options };
    writeFileSync(join(app, dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['use.ts'] }));
  };
  write(
    'ts-node',
    `import { type ChatMessage, type EngineLoadOptions, GREEDY, MemoryStore, ortForNode, SpecEngine } from 'spec-decoder';
const options: EngineLoadOptions = { target: 'models/austen-target', device: 'wasm', store: new MemoryStore() };
const engine = await SpecEngine.load(ortForNode(1), options);
const messages: ChatMessage[] = [{ role: 'user', content: 'Hi' }];
for await (const e of engine.generate({ messages }, { method: 'auto', maxNewTokens: 4, sampling: GREEDY }))
  console.log(e.accepted.length);
export const wrong: number = engine;
`,
    { module: 'nodenext', moduleResolution: 'nodenext', types: ['node'] },
  );
  write(
    'ts-web',
    `import 'spec-decoder/element';
import type { RoundEvent } from 'spec-decoder/element';
const el = document.querySelector('spec-decoder') as HTMLElement;
el.addEventListener('sd-round', (e) => {
  const round: RoundEvent = e.detail;
  console.log(round.accepted.length);
});
`,
    { module: 'esnext', moduleResolution: 'bundler', lib: ['es2022', 'dom'], types: [] },
  );
  const tsc = (dir: string) => {
    try {
      execFileSync(join(ROOT, 'node_modules/.bin/tsc'), ['-p', join(dir, 'tsconfig.json')], {
        cwd: app,
        encoding: 'utf8',
      });
      return '';
    } catch (e) {
      return String((e as { stdout?: string }).stdout ?? e).trim();
    }
  };
  expect(tsc('ts-node')).toBe(
    "ts-node/use.ts(7,14): error TS2322: Type 'SpecEngine' is not assignable to type 'number'.",
  );
  expect(tsc('ts-web')).toBe('');
});

test('the packed package runs on WebGPU in Node: ortForNodeWebGpu from the package, the same greedy tokens as wasm', () => {
  test.setTimeout(180_000);
  const load = (ort: string, device: string) => `await SpecEngine.load(${ort}, {
      target: ${JSON.stringify(join(ROOT, 'public/models/austen-target'))}, device: '${device}', precision: 'fp32',
    })`;
  const script = `
    import { SpecEngine, ortForNode, ortForNodeWebGpu } from 'spec-decoder';
    const run = async (engine) => {
      const it = engine.generate('She was', { method: 'ar', maxNewTokens: 6, sampling: { temperature: 0, topK: 0, topP: 1, seed: 0 } });
      let s = await it.next();
      while (!s.done) s = await it.next();
      await engine.release();
      return s.value.tokens;
    };
    const wasm = await run(${load('ortForNode()', 'wasm')});
    const gpu = await ortForNodeWebGpu();
    const webgpu = gpu.ok ? await run(${load('gpu.ort', 'webgpu')}) : null;
    if (gpu.ok) await gpu.shutdown();
    console.log(JSON.stringify({ wasm, webgpu, reason: gpu.ok ? null : gpu.reason }));`;
  const printed = execFileSync('node', ['--input-type=module', '-e', script], { cwd: app, encoding: 'utf8' });
  const { wasm, webgpu, reason } = JSON.parse(printed.trim().split('\n').pop() as string);
  expect(wasm).toHaveLength(6);
  // npm test's bootstrap found a Vulkan adapter (NODE_WEBGPU_EXPECTED): it must be used; elsewhere say why not.
  if (process.env.NODE_WEBGPU_EXPECTED === '1') expect(reason).toBeNull();
  test.skip(webgpu === null, `no WebGPU adapter in Node: ${reason}`);
  expect(webgpu).toEqual(wasm);
});

const TYPES: Record<string, string> = {
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.wasm': 'application/wasm',
};

test('the packed package works in a browser: the element from its browser entry, served from the install', async ({
  page,
}) => {
  test.setTimeout(180_000);
  const lib = join(app, 'node_modules', 'spec-decoder', 'dist', 'lib');
  const isolation = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };
  await page.route('**/pkg/**', (route) => {
    const path = new URL(route.request().url()).pathname.replace(/^\/pkg\//, '');
    if (path === 'host.html') {
      return route.fulfill({
        contentType: 'text/html',
        headers: isolation,
        body: `<!doctype html><html><head><script type="module" src="./spec-decoder.js"></script></head><body>
<spec-decoder target="../models/austen-target/" draft="../models/austen-draft/" ort-base="./ort/" device="wasm"
  method="chain" max-new-tokens="6" prompt="She was"></spec-decoder></body></html>`,
      });
    }
    const file = join(lib, path);
    if (!existsSync(file)) return route.fulfill({ status: 404, body: 'not found' });
    return route.fulfill({
      body: readFileSync(file),
      contentType: TYPES[extname(file)] ?? 'application/octet-stream',
      headers: isolation,
    });
  });
  await page.goto('./pkg/host.html');
  const tokens = await page.evaluate(async () => {
    await customElements.whenDefined('spec-decoder');
    const el = document.querySelector('spec-decoder') as HTMLElement & {
      generate(): Promise<{ tokens: number[] } | null>;
    };
    return (await el.generate())?.tokens;
  });
  expect(tokens).toHaveLength(6);
});
