/** vitest globalSetup: the CLI bundle (dist/cli.js, what bin/tagmask.js runs) is rebuilt where src/ is newer. */
// @ts-expect-error: a plain-JS build script without types
import { buildCli } from '../scripts/build-cli.js';

export default async function setup(): Promise<void> {
  await buildCli({ ifChanged: true });
}
