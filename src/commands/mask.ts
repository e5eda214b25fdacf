/** `tagmask mask`: rebuild each rollout's action mask (src/commands/rollouts.ts builds it with check). */
import { rolloutCommand } from './rollouts.ts';

export const mask = rolloutCommand('mask');
