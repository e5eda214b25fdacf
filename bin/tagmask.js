#!/usr/bin/env node
// The CLI, compiled to dist/ when the package is packed (and by `prepare` on `npm ci` in a clone).
try {
  await import('../dist/cli.js');
} catch (error) {
  if (error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes('dist/cli.js')) {
    process.stderr.write('tagmask: dist/ is missing: in a clone of the repository, run `npm ci` (or `npm run build`) first\n');
    process.exitCode = 2;
  } else {
    throw error;
  }
}
