/**
 * The sources, tests, benchmarks, scripts and the page's browser script type-check (strict): `npm run typecheck` is part of
 * `npm test`, so a type error in any of them fails CI as a failing test does.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TSC = fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url));

describe('type-check', { timeout: 120_000 }, () => {
  it.each(['tsconfig.json', 'tsconfig.bin.json', 'tsconfig.page.json'])('tsc -p %s reports no error', (config) => {
    const run = spawnSync(process.execPath, [TSC, '-p', config], { cwd: ROOT, encoding: 'utf8' });
    expect(`${run.stdout}${run.stderr}`.trim()).toBe('');
    expect(run.status).toBe(0);
  });
});
