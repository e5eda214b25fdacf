#!/usr/bin/env node
// Runs the CLI bundle dist/cli.js, built when the package is packed (npm run build). In a clone of the repository,
// which has scripts/ (not packed), the bundle is first rebuilt where src/ changed, so `node bin/tagmask.js` never
// runs stale code; an installed package writes nothing.
import { existsSync } from 'node:fs';

const builder = new URL('../scripts/build-cli.js', import.meta.url);
if (existsSync(builder)) await (await import(builder.href)).buildCli({ ifChanged: true });
// By URL, so type-checking bin/ (tsconfig.bin.json) does not pull in the generated bundle.
await import(new URL('../dist/cli.js', import.meta.url).href);
