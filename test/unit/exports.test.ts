/**
 * The API the README documents is the API the package exports (imported by its own name, as a user would).
 */
import { describe, expect, it } from 'vitest';

describe('package exports', () => {
  it('the README\'s imports resolve from "tagmask"', async () => {
    const api = await import('tagmask');
    for (const name of ['createMasker', 'Masker', 'trajectoryToData', 'auditExtension', 'checkTrajectory', 'compareMasks', 'loadGrammar', 'loadTokenizer', 'CODES', 'messageOf', 'MaskerPool', 'proveSuite']) {
      expect((api as Record<string, unknown>)[name], name).toBeDefined();
    }
    // One transition: observation [1, 2], action [3, 4]. Targets are [2, 3, 4]; only 3 and 4 are sampled.
    expect(api.trajectoryToData({ transitions: [{ ob: [1, 2], ac: { tokens: [3, 4], logprobs: [0, 0] } }] })[0].mask).toEqual(Uint8Array.from([0, 1, 1]));
  });
});
