/**
 * Diagnostic codes and records. Detection creates records; only src/report formats them for people.
 */
import type { Severity } from './grammar/check.ts';

export type { Severity };

export type DiagnosticCode =
  /** A token whose bytes cross an action/observation boundary (text re-tokenized in one piece). */
  | 'straddling-token'
  /** The model wrote a tag that looks like the environment's (a hallucinated `<information>`): kept as action. */
  | 'observation-tag-in-action'
  /** A tag opened while another was open: spans take the inner kind. */
  | 'nested-tag'
  /** A handover was followed by none of the replies the protocol allows: the text after it is kept as the model's. */
  | 'missing-reply'
  /** The episode-ending tag was followed by more model text. */
  | 'text-after-end'
  /** The stream ended inside an environment reply that never closed. */
  | 'unclosed-reply'
  /** A reply holds the opening of another: the one before it was cut (no close) and swallowed a model turn. */
  | 'reply-in-reply'
  /** A reply was ended by its token budget (max_tokens), not by its closing text. */
  | 'reply-truncated'
  /** The prompt end was not found and no prompt_length was given: everything is prompt. */
  | 'no-prompt-end'
  /** Not a single token is action: training on this rollout would do nothing. */
  | 'no-action';

export const SEVERITY: Record<DiagnosticCode, Severity> = {
  'straddling-token': 'warning',
  'observation-tag-in-action': 'warning',
  'nested-tag': 'info',
  'missing-reply': 'warning',
  'text-after-end': 'warning',
  'unclosed-reply': 'error',
  'reply-in-reply': 'error',
  'reply-truncated': 'info',
  'no-prompt-end': 'error',
  'no-action': 'warning',
};

export interface Diagnostic {
  code: DiagnosticCode;
  severity: Severity;
  /** 0-based token index the diagnostic is about. */
  token: number;
  message: string;
}

/** An input problem that stops one rollout (not the others): unknown ids, bad prompt_length. */
export class RolloutError extends Error {
  constructor(message: string, readonly token?: number) {
    super(message);
  }
}
