#!/usr/bin/env node
// `npm run check:package`: the package as a user gets it. Packs the repository, installs the tarball into an empty
// folder with a bare environment (no TAGMASK_*, no ONNXRUNTIME_*, no .npmrc: only the registry), and checks what
// issue 10 asks: node_modules size, `npx tagmask --version` / `mask --help`, `mask` on a tokenizer folder from
// that folder, `conformance`, a plain Node ESM import, and a TypeScript consumer (module NodeNext, strict,
// skipLibCheck off) compiling against the shipped types. Needs the registry, so it is not part of `npm test`
// (test/package/package.test.ts checks the offline part); .ci/run runs it.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const work = mkdtempSync(join(tmpdir(), 'tagmask-package-'));
const keep = process.argv.includes('--keep');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
// What a user's shell has: a PATH and a HOME (a fresh one, so no ~/.npmrc either), nothing of ours.
const bareEnv = { PATH: process.env.PATH, HOME: join(work, 'home') };
let failures = 0;

/** @param {string} name @param {boolean} ok @param {string} [detail] */
function check(name, ok, detail = '') {
  process.stdout.write(`${ok ? '✔' : '✖'} ${name}${detail ? `: ${detail}` : ''}\n`);
  if (!ok) failures++;
}

/** @param {string} command @param {string[]} args @param {string} cwd @param {import('node:child_process').SpawnSyncOptions} [options] */
function run(command, args, cwd, options = {}) {
  const result = spawnSync(command, args, { cwd, env: bareEnv, encoding: 'utf8', ...options });
  return { code: result.status, stdout: String(result.stdout ?? ''), stderr: String(result.stderr ?? '') };
}

/** @param {string} path @returns {number} */
function sizeOf(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, name) => sum + sizeOf(join(path, name)), 0);
}

try {
  // 1. Pack (runs `prepare`, i.e. the build) and install into an empty folder.
  const packed = execFileSync(npm, ['pack', '--json', '--pack-destination', work], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const tarball = join(work, JSON.parse(packed)[0].filename);
  const app = join(work, 'app');
  cpSync(join(root, 'scripts', 'check-package'), app, { recursive: true });
  const started = performance.now();
  const install = run(npm, ['install', '--no-audit', '--no-fund', tarball], app);
  check('npm install of the tarball in an empty folder, bare environment', install.code === 0, install.code === 0 ? `${((performance.now() - started) / 1000).toFixed(1)} s` : install.stderr.trim().split('\n').slice(-3).join(' | '));
  if (install.code !== 0) throw new Error('install failed');
  const megabytes = sizeOf(join(app, 'node_modules')) / 1e6;
  check('node_modules ≤ 20 MB', megabytes <= 20, `${megabytes.toFixed(1)} MB (${readdirSync(join(app, 'node_modules')).filter((name) => !name.startsWith('.')).join(', ')})`);
  const onnx = readdirSync(join(app, 'node_modules')).some((name) => name.startsWith('onnxruntime'));
  check('no onnxruntime installed', !onnx);

  // 2. The CLI through npx, from the app folder.
  const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;
  const versionRun = run('npx', ['tagmask', '--version'], app);
  check('npx tagmask --version', versionRun.code === 0 && versionRun.stdout.trim() === version, versionRun.stdout.trim() || versionRun.stderr.trim());
  const help = run('npx', ['tagmask', 'mask', '--help'], app);
  check('npx tagmask mask --help', help.code === 0 && help.stdout.includes('Usage: tagmask mask'));

  // A tokenizer folder in the app folder, named relative to it (the tutorial's, which ships with the package).
  cpSync(join(root, 'samples', 'tutorial-404'), join(app, 'my-tokenizer'), { recursive: true });
  const rollout = `${JSON.stringify({ id: 't', tokens: [100, 101, 102, 103, 200, 201, 300, 301, 400, 401, 402, 500, 600, 601], prompt_length: 4 })}\n`;
  const mask = run('npx', ['tagmask', 'mask', '--grammar', 'tutorial', '--tokenizer', 'my-tokenizer'], app, { input: rollout });
  // The tutorial's datum (samples/tutorial-404/expected.json): the model wrote tokens 4-5, 8-10 and 12-13.
  const expectedMask = [0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1];
  let maskOk = false;
  try { maskOk = mask.code === 0 && JSON.stringify(JSON.parse(mask.stdout).mask) === JSON.stringify(expectedMask); } catch { /* reported below */ }
  check('npx tagmask mask --tokenizer my-tokenizer (a folder in the current folder)', maskOk, maskOk ? '' : `${mask.code}: ${mask.stdout}${mask.stderr}`.trim());

  const conformance = run('npx', ['tagmask', 'conformance'], app);
  check('npx tagmask conformance (the suites whose tokenizers are installed)', conformance.code === 0 && conformance.stdout.includes('everything agrees'), conformance.stderr.trim().split('\n')[0]);
  const samples = run('npx', ['tagmask', 'samples', '-o', join(work, 'out')], app);
  check('npx tagmask samples', samples.code === 0, samples.stdout.trim().split('\n').at(-1));
  const cached = readdirSync(join(work, 'home', '.cache', 'tagmask'), { withFileTypes: true }).filter((entry) => entry.name.endsWith('.bin'));
  check('byte tables cached in ~/.cache/tagmask (the default without TAGMASK_CACHE)', cached.length > 0);
  const leftovers = readdirSync(join(app, 'node_modules', 'tagmask')).filter((name) => !['LICENSE', 'README.md', 'bin', 'dist', 'grammars', 'package.json', 'samples', 'src'].includes(name));
  check('nothing written inside the installed package', leftovers.length === 0, leftovers.join(', '));

  // 3. The library: plain Node ESM, and a strict NodeNext TypeScript consumer.
  const plain = run(process.execPath, ['consumer.js'], app);
  check('plain Node ESM: import { createMasker } from \'tagmask\'', plain.code === 0 && plain.stdout.trim() === expectedMask.join(''), `${plain.stdout}${plain.stderr}`.trim());
  // transformers is an optional peer, not installed here: tagmask works without it and says what to install to get it.
  const peer = run(process.execPath, ['--input-type=module', '-e', "import { loadTokenizer } from 'tagmask'; const t = await loadTokenizer('my-tokenizer'); console.log(t.encode('What is 2+3?').length); await t.transformers().catch((e) => console.log(e.message));"], app);
  check('without @huggingface/transformers: encode works, transformers() says what to install', peer.code === 0 && /^\d+\n.*npm install @huggingface\/transformers/.test(peer.stdout), `${peer.stdout}${peer.stderr}`.trim());
  writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', strict: true, noEmit: true, skipLibCheck: false,
      types: ['node'], typeRoots: [join(root, 'node_modules', '@types')],
    },
    files: ['consumer.ts'],
  }));
  const tsc = run(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', '.'], app);
  check('TypeScript consumer (NodeNext, strict, skipLibCheck off) compiles', tsc.code === 0, `${tsc.stdout}${tsc.stderr}`.trim().split('\n').slice(0, 5).join(' | '));
} catch (error) {
  check('package check ran to the end', false, error instanceof Error ? error.message : String(error));
} finally {
  if (keep) process.stdout.write(`kept ${work}\n`);
  else rmSync(work, { recursive: true, force: true });
}
process.exitCode = failures ? 1 : 0;
