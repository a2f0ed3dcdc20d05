// Make the emitted declarations (dist/lib/types) resolve under Node's ESM rules ("moduleResolution": "nodenext"):
// every relative specifier gets its file's .js extension (or /index.js for a folder), as the source's bundler-style
// extensionless imports do not. Without it a package user on nodenext got TS2834 errors, or with skipLibCheck every
// export typed any. Run by `npm run build` after tsc.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const root = resolve(process.argv[2] ?? 'dist/lib/types');
if (!existsSync(root)) {
  console.error(`fix-dts: no folder ${root} (run tsc -p tsconfig.lib.json first)`);
  process.exit(1);
}
const files = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.d.ts') ? [path] : [];
  });
/** `from './x'`, `import './x'`, `import('./x')` with a relative specifier that has no extension. */
const SPECIFIER = /((?:from|import)\s*\(?\s*)(['"])(\.{1,2}\/[^'"]*?)\2/g;
let changed = 0;
for (const file of files(root)) {
  const text = readFileSync(file, 'utf8');
  const fixed = text.replace(SPECIFIER, (whole, lead, quote, spec) => {
    if (/\.(js|mjs|cjs|json)$/.test(spec)) return whole;
    const target = resolve(dirname(file), spec);
    const withExt = existsSync(`${target}.d.ts`)
      ? `${spec}.js`
      : existsSync(join(target, 'index.d.ts'))
        ? `${spec}/index.js`
        : null;
    if (!withExt) throw new Error(`fix-dts: ${file}: ${spec} names no declaration file`);
    return `${lead}${quote}${withExt}${quote}`;
  });
  if (fixed !== text) {
    writeFileSync(file, fixed);
    changed++;
  }
}
console.log(`fix-dts: ${changed} declaration files given .js specifiers`);
