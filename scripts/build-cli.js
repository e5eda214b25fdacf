#!/usr/bin/env node
// The CLI as one file, dist/cli.js (and its --jobs worker, dist/mask-worker.js), bundled from src/cli.ts by esbuild at build time (part of `npm run build`).
// One file starts ~30 ms faster than the ~30 modules tsc emits (README, "Startup"); the dependencies stay
// outside, resolved from the installation. `--if-changed` rebuilds only when a file in src/ is newer:
// bin/tagmask.js calls it in a clone of the repository (and vitest's globalSetup, once before tests spawn the
// CLI side by side), so the CLI never runs stale code there.
import { existsSync, mkdirSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildPage } from './build-page.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outfile = join(root, 'dist', 'cli.js');

/**
 * The newest modification time under `dir`, folders included (a deleted file changes its folder's).
 * @param {string} dir
 * @returns {number}
 */
function newest(dir) {
  let time = statSync(dir).mtimeMs;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    time = Math.max(time, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return time;
}

export async function buildCli({ ifChanged = false } = {}) {
  // The page's script is part of src/ once bundled (src/report/page-script.ts): made first, where its sources changed.
  await buildPage({ ifChanged: true });
  if (ifChanged && existsSync(outfile) && statSync(outfile).mtimeMs >= newest(join(root, 'src'))) return false;
  const esbuild = await import('esbuild');
  // Written beside the target and renamed into place: processes started side by side never read half a file.
  const result = await esbuild.build({
    // The worker threads of `mask --jobs` run dist/mask-worker.js, beside the CLI (src/jobs.ts finds it there).
    entryPoints: { cli: join(root, 'src', 'cli.ts'), 'mask-worker': join(root, 'src', 'mask-worker.ts') },
    outdir: dirname(outfile),
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    sourcemap: true,
    logLevel: 'warning',
    write: false,
  });
  mkdirSync(dirname(outfile), { recursive: true });
  for (const file of result.outputFiles) {
    const temporary = `${file.path}.${process.pid}.tmp`;
    writeFileSync(temporary, file.contents);
    renameSync(temporary, file.path);
  }
  return true;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildCli({ ifChanged: process.argv.includes('--if-changed') });
