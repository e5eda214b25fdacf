/** `tagmask check`: compare the mask each rollout brings with the grammar's (src/commands/rollouts.ts builds it with mask). */
import { rolloutCommand } from './rollouts.ts';

export const check = rolloutCommand('check');
