/**
 * Every code tagmask reports, in one registry: what family it belongs to, its severity, and the template
 * that turns its arguments into words (the way parse5 keeps its parse errors in one `error-codes.ts`).
 *
 * Detection creates records: a code and its arguments (token index, byte offset, reply and option names,
 * literals, JSON paths). Words are made from the template only when someone reads them, and lines for
 * people or JSON are laid out by src/report. A new code is one entry here.
 */

export type Severity = 'error' | 'warning' | 'info';

/**
 * - `rollout`: raised by the scanner or the span builder on one rollout;
 * - `transition`: raised by a step of the grammar's machine (also rollout diagnostics);
 * - `grammar`: a grammar file's meaning (`tagmask grammar check`, loading);
 * - `lint`: how a grammar's literals tokenize;
 * - `conformance`: a comparison of two masks, or of a merge with its transitions.
 */
export type Family = 'rollout' | 'transition' | 'grammar' | 'lint' | 'conformance';

/** Why a reply's declaration is not a reply tagmask can recognise (code `reply-shape`). */
export type ReplyShapeRule = 'text-and-envelope' | 'neither' | 'envelope-without-open' | 'close-or-ends-before'
  | 'optional-without-close' | 'repeats-without-envelope' | 'reopens-without-envelope' | 'interrupt-not-text' | 'ends-before-not-model'
  | 'open-without-overlap';

/** How two literals collide (code `literal-overlap`). */
export type OverlapRule = 'same' | 'contains' | 'begins-alike' | 'interrupts-alike' | 'interrupt-overlaps';

/** The arguments a record may carry; each code's template says which it reads. */
export interface DiagnosticArgs {
  /** 0-based token index. */
  token?: number;
  /** Byte offset inside that token. */
  offset?: number;
  /** The token's decoded text. */
  text?: string;
  /** A reply's name. */
  reply?: string;
  /** The option a reply's `max_tokens` reads; null when the grammar gives the reply none. */
  option?: string | null;
  /** The grammar's name. */
  grammar?: string;
  budget?: number;
  /** The mask value a straddling token was given. */
  value?: number;
  /** The sides holding a straddling token's bytes, in byte order. */
  sides?: Array<'action' | 'observation'>;
  /** Literals (the prompt's possible ends, a tokenization's pieces). */
  literals?: string[];
  /** A name (tag, reply, option, state) a grammar refers to, and the names that do exist. */
  name?: string;
  known?: string[];
  literal?: string;
  /** The other party of an overlap: its JSON path and literal. */
  otherPath?: string;
  other?: string;
  rule?: ReplyShapeRule | OverlapRule;
  /** What the grammar's shape checker (or JSON parser) said. */
  detail?: string;
  /** A tokenizer's label, counts per tokenizer, BPE merges seen. */
  tokenizer?: string;
  counts?: Array<{ tokenizer: string; count: number }>;
  merges?: string[];
  /** The special tokens a literal holds in one tokenizer (matched by id), or per tokenizer. */
  specials?: Array<{ text: string; id: number }>;
  specialsBy?: Array<{ tokenizer: string; specials: string[] }>;
  /** The input fields a rollout was read from (text and message shapes). */
  fields?: string[];
}

interface CodeSpec {
  family: Family;
  severity: Severity;
  message: (args: DiagnosticArgs) => string;
}

const q = (text: string | undefined) => JSON.stringify(text ?? '');
const list = (names: string[] | undefined) => (names && names.length ? names.join(', ') : 'none');
const tokens = (count: number) => `${count} token${count === 1 ? '' : 's'}`;

/** What a cut reply's advice can truthfully say: the option to set, or that the grammar has none. */
function budgetAdvice(args: DiagnosticArgs): string {
  return args.option
    ? `if the environment cut it, set its budget option (e.g. --set ${args.option}=N)`
    : `grammar ${args.grammar ?? ''} gives reply "${args.reply ?? ''}" no budget option, so a cut reply cannot be told from an unclosed one (add "max_tokens": "$<option>" to the reply)`;
}

const REPLY_SHAPE: Record<ReplyShapeRule, string> = {
  'text-and-envelope': 'a reply is either a fixed "text" or an envelope ("open" … "close"/"ends_before"), not both',
  neither: 'a reply needs "text", or "open" with "close" or "ends_before"',
  'envelope-without-open': 'an envelope needs "open": replies are recognised by how they start',
  'close-or-ends-before': 'an envelope needs exactly one of "close" (its own last bytes) and "ends_before" (the model\'s next marker)',
  'optional-without-close': 'only an envelope with "close" can have optional text after it',
  'repeats-without-envelope': 'only an envelope with "open" and "close" can repeat: its open is looked for right after its close',
  'reopens-without-envelope': 'only an envelope with "open" and "close" can hold its own open',
  'interrupt-not-text': 'only a fixed "text" can interrupt a turn: an envelope is found only after a handover',
  'ends-before-not-model': 'must be a tag or marker the model writes, since the reply ends where the model starts it',
  'open-without-overlap': 'a reply after a handover with "overlap" must open with that overlap: it is looked for from the overlap\'s first byte',
};

export const CODES = {
  // Rollouts: the scanner and the span builder.
  'straddling-token': { family: 'rollout', severity: 'warning', message: (a) => `token ${a.token} (${q(a.text)}) holds bytes of ${(a.sides ?? []).join(' then ')}, the sides first changing at its byte ${a.offset}; it gets mask ${a.value} (option straddle)` },
  'unclosed-reply': { family: 'rollout', severity: 'error', message: (a) => `the stream ends inside reply "${a.reply}" opened at token ${a.token}, which never closed; ${budgetAdvice(a)}` },
  'reply-truncated': { family: 'rollout', severity: 'info', message: (a) => `reply "${a.reply}" ended by its budget of ${tokens(a.budget ?? 0)}${a.option ? ` (option ${a.option})` : ' (max_tokens)'} before its closing text` },
  'no-prompt-end': { family: 'rollout', severity: 'error', message: (a) => `the prompt's end (${(a.literals ?? []).map(q).join(' or ') || 'none declared'}) was not found and no prompt_length was given: every token is prompt` },
  'no-action': { family: 'rollout', severity: 'warning', message: () => 'no token is action: training on this rollout would change nothing' },
  // Rollouts: raised by a step of the grammar's machine (compile.ts reads them off its actions).
  'nested-tag': { family: 'transition', severity: 'info', message: (a) => `a tag opens at token ${a.token} (${q(a.text)}) while another is still open` },
  'observation-tag-in-action': { family: 'transition', severity: 'warning', message: (a) => `the model wrote an environment-looking tag itself at token ${a.token} (${q(a.text)}); it is the model's text, so it stays action` },
  'missing-reply': { family: 'transition', severity: 'warning', message: (a) => `no reply the protocol allows follows the handover ending at token ${a.token}; the text after it is kept as the model's (or, after the model's stop token, as nobody's)` },
  'text-after-end': { family: 'transition', severity: 'warning', message: (a) => `the model kept writing after the episode-ending tag at token ${a.token}; that text is kept as action` },
  'reply-in-reply': { family: 'transition', severity: 'error', message: (a) => `the opening of reply "${a.reply}" appears again at token ${a.token}, inside that reply before it closed: the environment probably cut the earlier reply (its close is missing), so a model turn was read as observation; ${budgetAdvice(a)}` },
  // Rollouts read from text or chat messages (src/io/text.ts, src/io/chat.ts).
  'retokenized-text': { family: 'rollout', severity: 'info', message: (a) => `tokens re-encoded from the text of ${(a.fields ?? []).map((field) => `"${field}"`).join(' and ')}: they can differ from the ids the model sampled, and so can the mask` },
  'special-tokens-stripped': { family: 'rollout', severity: 'warning', message: (a) => `the text holds no special token (decoded with skip_special_tokens=True?): the grammar's ${(a.literals ?? []).slice(0, 4).map(q).join(', ')}${(a.literals ?? []).length > 4 ? ` and ${(a.literals ?? []).length - 4} more` : ''} cannot be found, so the boundaries they mark are missed` },
  'message-not-attributed': { family: 'rollout', severity: 'warning', message: (a) => `${a.name} (assistant): ${a.detail}, so its tokens cannot be attributed to it; the message-derived mask leaves it 0` },
  // Grammars.
  'grammar-shape': { family: 'grammar', severity: 'error', message: (a) => a.detail ?? '' },
  'unknown-tag': { family: 'grammar', severity: 'error', message: (a) => `no tag named ${q(a.name)}${a.known ? ` (tags: ${list(a.known)})` : ''}` },
  'tag-without-close': { family: 'grammar', severity: 'error', message: (a) => `tag ${q(a.name)} has no "close", so nothing marks the handover` },
  'unknown-reply': { family: 'grammar', severity: 'error', message: (a) => `no reply named ${q(a.name)} (replies: ${list(a.known)})` },
  'unknown-option': { family: 'grammar', severity: 'error', message: (a) => `no option named ${q(a.name)} (options: ${list(a.known)})` },
  'duplicate-handover': { family: 'grammar', severity: 'error', message: (a) => `a handover after ${q(a.name)} is already declared` },
  'reply-shape': { family: 'grammar', severity: 'error', message: (a) => (a.rule === 'ends-before-not-model' ? `${q(a.literal)} ` : '') + REPLY_SHAPE[a.rule as ReplyShapeRule] },
  'unreachable-reply': { family: 'grammar', severity: 'warning', message: (a) => `no handover lists ${q(a.name)} and it does not interrupt, so it can never be recognised` },
  'too-many-automata': { family: 'grammar', severity: 'error', message: (a) => `the grammar needs ${a.detail}; at most ${a.budget} are supported (the prompt and each reply with a close are scanned by an automaton of their own)` },
  'too-many-states': { family: 'grammar', severity: 'error', message: (a) => `the tags make ${a.detail} (one per tag, one per nesting that "contains" makes); at most ${a.budget} are supported: declare fewer tags, or let fewer contain each other` },
  'grammar-too-large': { family: 'grammar', severity: 'error', message: (a) => `the grammar declares ${a.detail} by here; at most ${a.budget} are supported (literals are compared pairwise, and each byte is a row of a scanning table)` },
  'unreachable-state': { family: 'grammar', severity: 'warning', message: (a) => `state ${a.name} can never be reached from the prompt` },
  'literal-overlap': {
    family: 'grammar', severity: 'error', message: (a) => (a.rule === 'same' ? `${q(a.literal)} is also ${a.otherPath}: each literal may mean one thing`
      : a.rule === 'begins-alike' ? `${q(a.literal)} and a reply's start (${q(a.other)}) begin alike: after the handover one could not tell who writes`
      : a.rule === 'interrupts-alike' ? `${q(a.literal)} and ${a.otherPath} ${q(a.other)} are both interrupting texts found by ${q(a.detail)}: one could not tell which reply it is`
      : a.rule === 'interrupt-overlaps' ? `${q(a.literal)} is found inside a model turn by ${q(a.detail)}, and that and ${a.otherPath} ${q(a.other)} hold one another: one could not tell them apart`
        : `${q(a.literal)} contains ${a.otherPath} ${q(a.other)}, which would be found first`),
  },
  'no-prompt-end-declared': { family: 'grammar', severity: 'warning', message: () => 'no prompt end is declared: every rollout must bring "prompt_length"' },
  // Lint: literals against tokenizers.
  'literal-tokens': { family: 'lint', severity: 'info', message: (a) => `[${a.tokenizer}] ${q(a.literal)} is ${tokens(a.literals?.length ?? 0)}: ${(a.literals ?? []).map(q).join(' ')}` },
  'boundary-merge': { family: 'lint', severity: 'warning', message: (a) => `[${a.tokenizer}] ${q(a.literal)} starts or ends a role, and BPE merges it with its neighbour: ${(a.merges ?? []).join('; ')}. A stream re-tokenized in one piece gets straddling tokens there` },
  'literal-special': {
    family: 'lint', severity: 'info', message: (a) => (a.specials?.length
      ? `[${a.tokenizer}] ${q(a.literal)} holds the special token${a.specials.length === 1 ? '' : 's'} ${a.specials.map((item) => `${q(item.text)} (id ${item.id})`).join(', ')}: matched by id only, so the same characters spelled out as ordinary tokens are text${a.specials.map((item) => item.text).join('') === a.literal ? '' : '; the rest of it matches on bytes'}`
      : `[${a.tokenizer}] ${q(a.literal)} holds no special token: matched on bytes`),
  },
  'special-differs': {
    family: 'lint', severity: 'warning', message: (a) => `${q(a.literal)} is read differently by these tokenizers: ${(a.specialsBy ?? []).map((item) => `${item.tokenizer}: ${item.specials.length ? `special ${item.specials.map(q).join(', ')} (by id)` : 'text (bytes)'}`).join('; ')}. Where it is special, only the token id matches; where it is text, the spelled-out characters do`,
  },
  'too-many-specials': { family: 'lint', severity: 'error', message: (a) => `[${a.tokenizer}] the grammar's literals name ${a.detail}, more than the ${a.budget} the scanner can tell apart (each needs a byte no literal uses, and one more is kept); ${q(a.literal)} is the first one too many: mask refuses this grammar with this tokenizer` },
  'token-count-differs': { family: 'lint', severity: 'warning', message: (a) => `${q(a.literal)} is ${(a.counts ?? []).map((item) => `${tokens(item.count)} in ${item.tokenizer}`).join(', ')}: a grammar names it by its text, never by one id` },
  // Conformance: a disagreement run is `mask-mismatch`, or `straddling-token` when every token of it straddles.
  'mask-mismatch': { family: 'conformance', severity: 'error', message: (a) => `tokens from ${a.token} get different masks` },
} satisfies Record<string, CodeSpec>;

export type Code = keyof typeof CODES;
type CodesOf<F extends Family> = { [C in Code]: (typeof CODES)[C]['family'] extends F ? C : never }[Code];

/** Codes a rollout's diagnostics carry (scanner, spans, machine transitions). */
export type DiagnosticCode = CodesOf<'rollout' | 'transition'>;
export type TransitionCode = CodesOf<'transition'>;
export type GrammarIssueCode = CodesOf<'grammar'>;
export type LintCode = CodesOf<'lint'>;

export function severityOf(code: Code): Severity {
  return CODES[code].severity;
}

/** The words for a record. */
export function messageOf(code: Code, args: DiagnosticArgs): string {
  return (CODES[code] as CodeSpec).message(args);
}

/** A rollout's diagnostic as the library returns it and `mask` writes it. */
export interface Diagnostic {
  code: DiagnosticCode;
  severity: Severity;
  /** 0-based token index the diagnostic is about. */
  token: number;
  /** Byte offset inside that token, where it says more than the token (a straddling token: where its sides first change). */
  offset?: number;
  message: string;
}

/** An input problem that stops one rollout (not the others): unknown ids, bad prompt_length. */
export class RolloutError extends Error {
  constructor(message: string, readonly token?: number) {
    super(message);
  }
}
