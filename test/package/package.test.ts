/**
 * The package as npm would pack it, checked offline (scripts/check-package.js installs the real tarball, which
 * needs the registry: `npm run check:package`). The file list comes from `npm pack --dry-run`, so `files`,
 * `exports` and `bin` are checked together; the library is imported the way a plain Node ESM user does.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const dir = mkdtempSync(join(tmpdir(), 'tagmask-package-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const newest = (path: string): number => {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(stat.mtimeMs, ...readdirSync(path).map((name) => newest(join(path, name))));
};

let files: string[];

beforeAll(() => {
  // The library half of dist/ (the CLI bundle is rebuilt by the global setup): rebuilt here where src/ is newer,
  // without type-checking (`npm run build` and `npm run typecheck` do that).
  const index = join(ROOT, 'dist', 'index.js');
  if (!existsSync(index) || statSync(index).mtimeMs < newest(join(ROOT, 'src'))) {
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json'), '--noCheck']);
  }
  const listing = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  files = (JSON.parse(listing)[0].files as Array<{ path: string }>).map((file) => file.path);
}, 120_000);

describe('what npm packs', () => {
  it('the built library and CLI, their types and maps, the sources they map to, grammars, samples, LICENSE', () => {
    for (const file of ['LICENSE', 'README.md', 'package.json', 'bin/tagmask.js', 'dist/index.js', 'dist/index.d.ts', 'dist/index.js.map', 'dist/cli.js', 'dist/cli.js.map', 'dist/mask-worker.js', 'src/index.ts', 'grammars/search-r1.json', 'samples/tutorial-404/suite.json', 'samples/tutorial-404/tokenizer.json', 'samples/search-r1-qwen3/rollouts.jsonl']) {
      expect(files, file).toContain(file);
    }
  });

  it('no tests, build scripts, sample generators, build state or repository settings', () => {
    for (const prefix of ['test/', 'scripts/', 'samples/build/', 'bench/', 'dist/.tsbuildinfo', '.npmrc', '.ci/', 'tsconfig', 'vitest.config', 'out/']) {
      expect(files.filter((file) => file.startsWith(prefix)), prefix).toEqual([]);
    }
  });

  it('every path package.json points at is packed', () => {
    const targets = [pkg.main, pkg.types, ...Object.values(pkg.bin as Record<string, string>), ...Object.values(pkg.exports['.'] as Record<string, string>)];
    for (const target of targets) expect(files, target).toContain(target.replace(/^\.\//, ''));
    expect(pkg.license).toBe('MIT');
    expect(readFileSync(join(ROOT, 'LICENSE'), 'utf8')).toMatch(/^MIT License/);
  });

  it('run-time dependencies hold no build tools and no transformers (an optional peer)', () => {
    for (const name of ['esbuild', 'tsx', 'vitest', 'typescript', '@huggingface/transformers']) expect(pkg.dependencies[name], name).toBeUndefined();
    expect(pkg.peerDependenciesMeta['@huggingface/transformers'].optional).toBe(true);
  });
});

describe('plain Node ESM', () => {
  it('import { createMasker } from \'tagmask\' loads dist/ and masks the tutorial datum as the tutorial says', () => {
    const app = join(dir, 'app');
    mkdirSync(join(app, 'node_modules'), { recursive: true });
    cpSync(join(ROOT, 'scripts/check-package'), app, { recursive: true });
    cpSync(join(ROOT, 'samples/tutorial-404'), join(app, 'my-tokenizer'), { recursive: true });
    symlinkSync(ROOT, join(app, 'node_modules', 'tagmask'), 'dir');
    const run = spawnSync(process.execPath, ['consumer.js'], { cwd: app, encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
    expect(run.stderr).toBe('');
    // The model wrote " 5 <|end|>", "15<|end|>" and "16\n<|end|>" (tinker-cookbook tutorial 404's datum).
    expect(run.stdout.trim()).toBe('00001100111011');
    // and it was dist/, not the TypeScript sources (plain Node cannot load those)
    const resolved = spawnSync(process.execPath, ['--input-type=module', '-e', 'console.log(import.meta.resolve("tagmask"))'], { cwd: app, encoding: 'utf8' });
    expect(resolved.stdout.trim()).toMatch(/\/dist\/index\.js$/);
  });
});
