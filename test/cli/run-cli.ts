/** The CLI as a user runs it (`bin/tagmask.js` in a child process), for the tests that spawn it. */
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface Run { code: number | null; signal?: NodeJS.Signals | null; stdout: string; stderr: string }
export interface RunOptions { input?: string; env?: NodeJS.ProcessEnv }

/** Run the CLI; async so that concurrent tests run their processes side by side. */
export function tagmask(args: string[], input?: string, options: { env?: NodeJS.ProcessEnv } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/tagmask.js', ...args], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'], env: options.env ?? process.env });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout: Buffer.concat(stdout).toString('utf8'), stderr: Buffer.concat(stderr).toString('utf8') }));
    child.stdin.on('error', () => {}); // a process that exits before reading all of stdin is not a test failure
    child.stdin.end(input ?? '');
  });
}

/** The same, blocking (for tests that run one command at a time). */
export function tagmaskSync(args: string[], options: RunOptions = {}): Run {
  const run = spawnSync(process.execPath, ['bin/tagmask.js', ...args], { cwd: ROOT, input: options.input ?? '', encoding: 'utf8', env: options.env ?? process.env });
  return { code: run.status, signal: run.signal, stdout: run.stdout, stderr: run.stderr };
}
