import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // CLI tests spawn bin/tagmask.js, which runs dist/: rebuild it first where src/ changed.
    globalSetup: ['test/build-dist.ts'],
    // A budget against hangs, not a speed check. The tests that load real tokenizers, spawn the CLI or run
    // property checks state their own (30–120 s); on two busy cores the rest stay far below this.
    testTimeout: 20_000,
    hookTimeout: 60_000,
  },
});
