/** In the repository, `import 'tagmask'` is the sources (package.json's "development" condition), not a stale dist/. */
import { expect, it } from 'vitest';
import * as fromPackage from 'tagmask';
import * as fromSources from '../../src/index.ts';

it('tagmask resolves to src/index.ts under vitest', () => {
  expect(fromPackage.createMasker).toBe(fromSources.createMasker);
  expect(fromPackage.Masker).toBe(fromSources.Masker);
});
