/**
 * The package's own folders. Found by walking up to package.json rather than by a fixed `../..`, so the
 * same code works from src/ (tsx, tests) and from the bundle in dist/ that bin/tagmask.js runs.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('tagmask: cannot find its package.json');
    dir = parent;
  }
  return dir;
}

export const PACKAGE_ROOT = packageRoot();
export const BUNDLED_GRAMMARS = join(PACKAGE_ROOT, 'grammars');
export const BUNDLED_SAMPLES = join(PACKAGE_ROOT, 'samples');
