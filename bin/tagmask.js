#!/usr/bin/env node
// Runs the CLI from a bundle of src/ (dist/tagmask.mjs), built with esbuild on first use and again
// whenever a file in src/ changes: compiling the TypeScript on every start through tsx costs ~0.3 s.
// Without esbuild it falls back to tsx.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');
const bundle = join(root, 'dist', 'tagmask.mjs');
const stampFile = `${bundle}.stamp`;

/** What the bundle was built from: every source file's path, size and modification time. */
function stampOf(dir) {
  let stamp = '';
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) stamp += stampOf(path);
    else if (entry.name.endsWith('.ts')) {
      const stat = statSync(path);
      stamp += `${path}|${stat.size}|${stat.mtimeMs}\n`;
    }
  }
  return stamp;
}

async function fresh() {
  const stamp = stampOf(src);
  if (existsSync(bundle) && existsSync(stampFile) && readFileSync(stampFile, 'utf8') === stamp) return true;
  let esbuild;
  try {
    esbuild = await import('esbuild');
  } catch {
    return false;
  }
  mkdirSync(dirname(bundle), { recursive: true });
  // Several processes may build at once: each writes its own file and renames it into place.
  const temporary = `${bundle}.${process.pid}.tmp`;
  await esbuild.build({
    entryPoints: [join(src, 'cli.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    outfile: temporary,
    logLevel: 'silent',
  });
  renameSync(temporary, bundle);
  writeFileSync(`${stampFile}.${process.pid}`, stamp);
  renameSync(`${stampFile}.${process.pid}`, stampFile);
  return true;
}

if (await fresh().catch(() => false)) {
  await import(pathToFileURL(bundle).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(join(src, 'cli.ts')).href);
}
