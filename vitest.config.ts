import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // CLI tests spawn bin/tagmask.js, which runs dist/: rebuild it first where src/ changed.
    globalSetup: ['test/build-dist.ts'],
  },
});
