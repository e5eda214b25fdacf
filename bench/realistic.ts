/**
 * A realistic Search-R1 benchmark corpus: what Search-R1 *training* rollouts look like, as opposed to the
 * tag-dense conformance samples (bench/corpus.ts).
 *
 * A few hundred distinct scenarios are generated from a seeded PRNG (mulberry32, no Math.random): an
 * NQ/HotpotQA-style question, 0–3 searches, each answered by 3 retrieved wiki-18-style documents of about
 * 100 words (a quoted title line, then sentences with names, numbers, dates, commas and parentheses, cut
 * at a word count like the wiki-18 passages), short <think> blocks and an <answer>. A few documents carry
 * what real web text does now and then: a `<` or `>` (an inequality, a stray `<br>`, `vector<int>`), CJK
 * in parentheses, an emoji. A few rollouts have an invalid turn (a <think> with no action → the
 * invalid-action reply) or omit the <think>.
 *
 * Each scenario is built with `runSearchR1` (samples/build/search-r1.ts), which runs Search-R1's rollout
 * loop piece by piece for the real tokenizer (prompt in the chat template, each action and observation
 * tokenized on its own), so the expected mask is known by construction, never derived from tags.
 * Half the rollouts state `prompt_length`, half leave the masker to find the assistant header.
 *
 * Numbers aimed at (docs/measurements.md §4): ~700 tokens per rollout, ~130–145 prompt tokens,
 * ~86 % of response tokens observation, ~5 % of tokens holding a `<` byte.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadTokenizer as loadSampleTokenizer, maskOf, runSearchR1, type Scenario, type Tokenizer } from '../samples/build/search-r1.ts';
import { prng, tileCorpus, type Corpus, type SampleLine, type TARGETS } from './corpus.ts';

export const REALISTIC_SEED = 0x5e4c41;
export const REALISTIC_SCENARIOS = 400;

type Random = () => number;

// ── small random helpers ───────────────────────────────────────────────────────────────────────────
const pick = <T>(random: Random, list: readonly T[]): T => list[Math.floor(random() * list.length)];
const int = (random: Random, lo: number, hi: number): number => lo + Math.floor(random() * (hi - lo + 1));
const chance = (random: Random, p: number): boolean => random() < p;
const thousands = (n: number): string => n.toLocaleString('en-US');
const capitalize = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

// ── vocabulary ─────────────────────────────────────────────────────────────────────────────────────
const FIRST = ['James', 'Mary', 'John', 'Patricia', 'Robert', 'Jennifer', 'Michael', 'Linda', 'William', 'Elizabeth', 'David', 'Barbara', 'Richard', 'Susan', 'Joseph', 'Jessica', 'Thomas', 'Sarah', 'Charles', 'Karen', 'Henry', 'Margaret', 'George', 'Dorothy', 'Edward', 'Helen', 'Arthur', 'Alice', 'Frederick', 'Eleanor', 'Samuel', 'Catherine', 'Louis', 'Anna', 'Walter', 'Grace', 'Harold', 'Ruth', 'Albert', 'Clara', 'Pierre', 'Marie', 'Hans', 'Ingrid', 'Giovanni', 'Lucia', 'Carlos', 'Isabel', 'Kenji', 'Yuki', 'Ivan', 'Olga', 'Ahmed', 'Fatima', 'Raj', 'Priya', 'José', 'Zoë', 'Søren', 'Dvořák'];
const LAST = ['Smith', 'Johnson', 'Williams', 'Brown', 'Jones', 'Miller', 'Davis', 'Wilson', 'Anderson', 'Taylor', 'Thomas', 'Moore', 'Martin', 'Jackson', 'Thompson', 'White', 'Harris', 'Clark', 'Lewis', 'Robinson', 'Walker', 'Young', 'Allen', 'King', 'Wright', 'Scott', 'Hill', 'Green', 'Adams', 'Baker', 'Nelson', 'Carter', 'Mitchell', 'Campbell', 'Roberts', 'Turner', 'Phillips', 'Parker', 'Evans', 'Edwards', 'Collins', 'Stewart', 'Morris', 'Murphy', 'Cook', 'Rogers', 'Dubois', 'Lefèvre', 'Müller', 'Schneider', 'Rossi', 'Bianchi', 'García', 'Fernández', 'Tanaka', 'Suzuki', 'Petrov', 'Kowalski', 'Novák', 'Haddad', 'Sharma', 'Okafor', 'Lindqvist', 'O\'Brien', 'MacLeod'];
const PLACES: Array<[string, string, string]> = [
  // [city, country, demonym]
  ['Manchester', 'England', 'English'], ['Leeds', 'England', 'English'], ['Bristol', 'England', 'English'], ['Glasgow', 'Scotland', 'Scottish'],
  ['Cardiff', 'Wales', 'Welsh'], ['Dublin', 'Ireland', 'Irish'], ['Boston', 'Massachusetts', 'American'], ['Chicago', 'Illinois', 'American'],
  ['Houston', 'Texas', 'American'], ['Denver', 'Colorado', 'American'], ['Seattle', 'Washington', 'American'], ['Atlanta', 'Georgia', 'American'],
  ['Toronto', 'Ontario', 'Canadian'], ['Vancouver', 'British Columbia', 'Canadian'], ['Sydney', 'New South Wales', 'Australian'], ['Perth', 'Western Australia', 'Australian'],
  ['Auckland', 'New Zealand', 'New Zealand'], ['Lyon', 'France', 'French'], ['Marseille', 'France', 'French'], ['Hamburg', 'Germany', 'German'],
  ['Munich', 'Germany', 'German'], ['Milan', 'Italy', 'Italian'], ['Naples', 'Italy', 'Italian'], ['Seville', 'Spain', 'Spanish'],
  ['Porto', 'Portugal', 'Portuguese'], ['Rotterdam', 'the Netherlands', 'Dutch'], ['Gothenburg', 'Sweden', 'Swedish'], ['Bergen', 'Norway', 'Norwegian'],
  ['Kraków', 'Poland', 'Polish'], ['Brno', 'the Czech Republic', 'Czech'], ['Osaka', 'Japan', 'Japanese'], ['Busan', 'South Korea', 'South Korean'],
  ['Mumbai', 'India', 'Indian'], ['Lagos', 'Nigeria', 'Nigerian'], ['Cape Town', 'South Africa', 'South African'], ['São Paulo', 'Brazil', 'Brazilian'],
  ['Córdoba', 'Argentina', 'Argentine'], ['Monterrey', 'Mexico', 'Mexican'], ['Zürich', 'Switzerland', 'Swiss'], ['Graz', 'Austria', 'Austrian'],
];
const OCCUPATIONS = ['actor', 'actress', 'singer-songwriter', 'novelist', 'politician', 'footballer', 'film director', 'composer', 'physicist', 'painter', 'journalist', 'architect', 'chemist', 'television presenter', 'guitarist', 'poet', 'economist', 'businessman', 'cricketer', 'historian'];
const AWARDS = ['Academy Award', 'Grammy Award', 'Pulitzer Prize', 'Nobel Prize in Physics', 'Booker Prize', 'Golden Globe Award', 'BAFTA Award', 'Emmy Award', 'Turner Prize', 'Ballon d\'Or'];
const NOUNS = ['River', 'Crown', 'Garden', 'Shadow', 'Harbour', 'Winter', 'Mountain', 'Letter', 'Silence', 'Island', 'Bridge', 'Storm', 'Mirror', 'Road', 'Valley', 'Stranger', 'Promise', 'Lantern', 'Orchard', 'Frontier'];
const ADJECTIVES = ['Last', 'Silent', 'Golden', 'Broken', 'Distant', 'Hidden', 'Long', 'Lost', 'Bright', 'Quiet', 'Northern', 'Secret', 'Wild', 'Empty', 'Burning'];
const GENRES = ['drama', 'comedy', 'thriller', 'science fiction', 'romantic comedy', 'crime drama', 'war', 'musical', 'horror', 'biographical'];
const STUDIOS = ['Paramount Pictures', 'Universal Pictures', 'Warner Bros.', 'Columbia Pictures', '20th Century Fox', 'Metro-Goldwyn-Mayer', 'Lionsgate', 'Miramax'];
const LABELS = ['Columbia Records', 'EMI', 'Atlantic Records', 'Island Records', 'Capitol Records', 'Def Jam', 'Parlophone', 'Sub Pop'];
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const TEAMS = ['United', 'City', 'Rovers', 'Athletic', 'Wanderers', 'Albion', 'Rangers', 'County'];
const LEAGUES = ['Premier League', 'National Football League', 'National Basketball Association', 'Serie A', 'La Liga', 'Bundesliga', 'Major League Baseball', 'National Hockey League'];

/** Plain prose that wiki passages carry between the facts (no numbers). */
const PROSE = [
  'It is considered one of the most influential works of its kind, and it remains widely studied today.',
  'The decision was controversial at the time, but it was later defended by most historians of the period.',
  'Several of the early works were lost, although copies survive in private collections and regional archives.',
  'The name is derived from an old local word meaning "meeting place" or "crossing of the river".',
  'Critics have described it as ambitious and uneven, praising its scope while questioning some of its choices.',
  'The region has a long tradition of music, theatre and literature, and hosts several festivals every summer.',
  'Much of the original material was later revised, and the final version differs considerably from the first draft.',
  'During this period the family moved several times, living briefly in the countryside before returning to the city.',
  'The project was delayed by financial difficulties and disagreements between the main partners.',
  'Its influence can be seen in the work of many later artists, writers and musicians across Europe and North America.',
  'Contemporary reviews were mixed, although its reputation grew steadily over the following decades.',
  'The building was badly damaged during the war and was restored in the original style after a public campaign.',
  'Local newspapers covered the story extensively, and it became a frequent subject of debate in parliament.',
  'He was known for his careful preparation, his sense of humour and his loyalty to the people he worked with.',
  'She was an active supporter of education and public libraries, and served on the boards of several charities.',
  'The club struggled financially for many years and was nearly dissolved before a group of supporters took over.',
  'The town grew quickly after the arrival of the railway, which connected it to the coast and the capital.',
  'A number of scenes were filmed on location, while the interiors were shot on sound stages built for the production.',
];

/** Rare bits of real web text that hold a `<`, a `>`, CJK or an emoji. */
const ODDITIES = [
  'In the notation of the period, a < b was written for any two lengths with a shorter than b.',
  'The original page layout used <br> tags between stanzas, which later editions removed.',
  'Early implementations stored the values in a std::vector<int> and sorted them in place.',
  'Temperatures > 40 °C were recorded on 12 days that summer.',
  'The ratio of 3:2 (≥ 1.5) was kept in every later design.',
  'The name is written 北京 (Běijīng) in the local script.',
  'In Japan it was released as 東京物語 (Tōkyō Monogatari).',
  'The Korean title is 서울의 봄, literally "Spring in Seoul".',
  'Fans adopted the 🚀 emoji as the unofficial symbol of the campaign.',
  'A typical entry reads "score -> 12 <- final" in the scanned programme.',
];

// ── entities ───────────────────────────────────────────────────────────────────────────────────────
interface Person { name: string; first: string; last: string; born: string; bornYear: number; died?: string; city: string; country: string; demonym: string; occupation: string; he: string; his: string }
interface Work { title: string; year: number; kind: 'film' | 'album' | 'novel'; creator: Person; star: Person; other: Person }

function date(random: Random, year: number): string {
  const day = int(random, 1, 28);
  const month = pick(random, MONTHS);
  return chance(random, 0.5) ? `${day} ${month} ${year}` : `${month} ${day}, ${year}`;
}

function person(random: Random): Person {
  const first = pick(random, FIRST);
  const last = pick(random, LAST);
  const bornYear = int(random, 1850, 1995);
  const [city, country, demonym] = pick(random, PLACES);
  const female = ['Mary', 'Patricia', 'Jennifer', 'Linda', 'Elizabeth', 'Barbara', 'Susan', 'Jessica', 'Sarah', 'Karen', 'Margaret', 'Dorothy', 'Helen', 'Alice', 'Eleanor', 'Catherine', 'Anna', 'Grace', 'Ruth', 'Clara', 'Marie', 'Ingrid', 'Lucia', 'Isabel', 'Yuki', 'Olga', 'Fatima', 'Priya', 'Zoë'].includes(first);
  const deathYear = bornYear + int(random, 45, 95);
  return {
    name: `${first} ${last}`, first, last, bornYear, born: date(random, bornYear),
    died: deathYear < 2024 ? date(random, deathYear) : undefined,
    city, country, demonym, occupation: pick(random, OCCUPATIONS),
    he: female ? 'she' : 'he', his: female ? 'her' : 'his',
  };
}

function title(random: Random): string {
  const forms = [
    () => `The ${pick(random, ADJECTIVES)} ${pick(random, NOUNS)}`,
    () => `${pick(random, NOUNS)} of the ${pick(random, NOUNS)}`,
    () => `A ${pick(random, NOUNS)} in ${pick(random, PLACES)[0]}`,
    () => `${pick(random, ADJECTIVES)} ${pick(random, NOUNS)}s`,
    () => `The ${pick(random, NOUNS)} and the ${pick(random, NOUNS)}`,
  ];
  return pick(random, forms)();
}

function work(random: Random): Work {
  return { title: title(random), year: int(random, 1930, 2021), kind: pick(random, ['film', 'film', 'album', 'novel'] as const), creator: person(random), star: person(random), other: person(random) };
}

// ── documents ──────────────────────────────────────────────────────────────────────────────────────
/** Sentences about an entity, in the order a Wikipedia lead would give them. */
function personSentences(random: Random, p: Person): string[] {
  const life = p.died ? `(${p.born} – ${p.died})` : `(born ${p.born})`;
  const w = title(random);
  const year = p.bornYear + int(random, 20, 40);
  return [
    `${p.name} ${life} was ${/^[aeiou]/.test(p.demonym.toLowerCase()) ? 'an' : 'a'} ${p.demonym} ${p.occupation}.`,
    `Born in ${p.city}, ${p.country}, ${p.he} was the ${pick(random, ['eldest', 'youngest', 'second', 'third'])} of ${int(random, 2, 9)} children of ${pick(random, FIRST)} ${p.last}, a ${pick(random, ['schoolteacher', 'merchant', 'railway clerk', 'doctor', 'farmer', 'lawyer'])}.`,
    `${capitalize(p.he)} studied at the University of ${pick(random, PLACES)[0]} from ${year - 4} to ${year}, where ${p.he} met ${pick(random, FIRST)} ${pick(random, LAST)}.`,
    `${capitalize(p.his)} breakthrough came in ${year + 2} with "${w}", which sold more than ${thousands(int(random, 20, 900) * 1000)} copies in its first year.`,
    `In ${year + int(random, 5, 20)}, ${p.he} received the ${pick(random, AWARDS)} for ${p.his} work on "${title(random)}".`,
    `${p.last} married ${pick(random, FIRST)} ${pick(random, LAST)} in ${year + int(random, 1, 12)}; they had ${int(random, 1, 5)} children.`,
    `${capitalize(p.he)} later moved to ${pick(random, PLACES)[0]}, where ${p.he} lived until ${p.died ? p.his + ' death' : int(random, 1990, 2020)}.`,
    `According to the ${int(random, 1960, 2020)} biography by ${pick(random, FIRST)} ${pick(random, LAST)}, ${p.he} wrote ${int(random, 3, 40)} works in ${int(random, 2, 4)} languages.`,
  ];
}

function workSentences(random: Random, w: Work): string[] {
  const gross = int(random, 2, 950);
  if (w.kind === 'film') {
    return [
      `${w.title} is a ${w.year} ${w.creator.demonym} ${pick(random, GENRES)} film directed by ${w.creator.name} and starring ${w.star.name}, ${w.other.name} and ${pick(random, FIRST)} ${pick(random, LAST)}.`,
      `The screenplay, written by ${w.creator.name} and ${pick(random, FIRST)} ${pick(random, LAST)}, is based on the ${w.year - int(random, 2, 30)} novel of the same name.`,
      `Principal photography began in ${pick(random, MONTHS)} ${w.year - 1} in ${w.star.city} and lasted ${int(random, 6, 30)} weeks.`,
      `The film was released by ${pick(random, STUDIOS)} on ${date(random, w.year)}, and grossed $${gross}.${int(random, 0, 9)} million worldwide against a budget of $${int(random, 1, 200)} million.`,
      `It received ${int(random, 1, 11)} nominations at the ${int(random, 20, 95)}th Academy Awards, winning ${int(random, 0, 4)}, including Best ${pick(random, ['Actor', 'Actress', 'Original Score', 'Cinematography', 'Film Editing'])} for ${w.star.name}.`,
      `Critics praised the performances of ${w.star.last} and ${w.other.last} (who replaced ${pick(random, FIRST)} ${pick(random, LAST)} two weeks into filming), though some found the ending abrupt.`,
      `A sequel, ${title(random)}, followed in ${w.year + int(random, 2, 6)}.`,
    ];
  }
  if (w.kind === 'album') {
    return [
      `${w.title} is the ${pick(random, ['debut', 'second', 'third', 'fourth', 'fifth'])} studio album by ${w.creator.demonym} ${pick(random, ['singer', 'band leader', 'rapper', 'songwriter'])} ${w.creator.name}, released on ${date(random, w.year)} by ${pick(random, LABELS)}.`,
      `It was recorded at ${pick(random, LAST)} Studios in ${w.creator.city} between ${pick(random, MONTHS)} and ${pick(random, MONTHS)} ${w.year - 1}, with production by ${w.star.name}.`,
      `The album debuted at number ${int(random, 1, 40)} on the Billboard 200, selling ${thousands(int(random, 10, 400) * 1000)} copies in its first week.`,
      `Its lead single, "${title(random)}", reached the top ${pick(random, ['five', 'ten', 'twenty'])} in ${int(random, 3, 15)} countries.`,
      `${w.title} was certified ${pick(random, ['gold', 'platinum', 'double platinum', 'triple platinum'])} by the RIAA in ${w.year + int(random, 0, 3)} and won the Grammy Award for Best ${pick(random, ['Rock', 'Pop Vocal', 'Rap', 'Alternative Music'])} Album.`,
      `The songs were written by ${w.creator.last} with ${w.other.name}, except "${title(random)}" (a cover of a ${w.year - int(random, 10, 40)} song by ${pick(random, FIRST)} ${pick(random, LAST)}).`,
    ];
  }
  return [
    `${w.title} is a ${w.year} novel by ${w.creator.demonym} author ${w.creator.name}.`,
    `Set in ${w.star.city} during the ${Math.floor((w.year - int(random, 10, 80)) / 10) * 10}s, it follows ${pick(random, FIRST)} ${pick(random, LAST)}, a young ${pick(random, OCCUPATIONS)}, over ${int(random, 2, 30)} years.`,
    `It was first published by ${pick(random, ['Faber and Faber', 'Penguin Books', 'Random House', 'Jonathan Cape', 'Alfred A. Knopf', 'Hamish Hamilton'])} on ${date(random, w.year)}, and was shortlisted for the ${pick(random, AWARDS)} the following year.`,
    `The novel has been translated into ${int(random, 5, 50)} languages and has sold over ${int(random, 1, 30)} million copies.`,
    `A film adaptation directed by ${w.star.name} was released in ${w.year + int(random, 2, 20)}, with ${w.other.name} in the lead role.`,
    `${w.creator.last} said in a ${w.year + 1} interview that the book took ${int(random, 2, 12)} years to write.`,
  ];
}

function placeSentences(random: Random, city: string, country: string): string[] {
  const population = int(random, 40, 4000) * 1000 + int(random, 0, 999);
  const founded = int(random, 800, 1900);
  return [
    `${city} is a city in ${country}, and the ${pick(random, ['second-largest', 'third-largest', 'fourth-largest', 'fifth-largest', 'largest'])} city in the region.`,
    `As of the ${int(random, 2001, 2021)} census, the city had a population of ${thousands(population)}, and the wider metropolitan area ${thousands(population * int(random, 2, 4))}.`,
    `The city was founded in ${founded} as a ${pick(random, ['trading post', 'fortified town', 'fishing village', 'market town', 'river crossing'])} and received its charter in ${founded + int(random, 20, 300)}.`,
    `It lies on the ${pick(random, NOUNS)} River, about ${int(random, 20, 400)} km (${int(random, 12, 250)} mi) from the capital, at an elevation of ${int(random, 2, 900)} metres.`,
    `${city} is home to the University of ${city}, founded in ${int(random, 1400, 1970)}, and to ${pick(random, PLACES)[0]} ${pick(random, TEAMS)}, which plays in the ${pick(random, LEAGUES)}.`,
    `The economy is based on ${pick(random, ['shipping', 'textiles', 'banking', 'tourism', 'steel', 'software'])}, ${pick(random, ['education', 'retail', 'engineering', 'publishing'])} and ${pick(random, ['healthcare', 'logistics', 'agriculture', 'the arts'])}.`,
    `The average temperature ranges from ${int(random, -8, 8)} °C in January to ${int(random, 18, 32)} °C in July.`,
  ];
}

function teamSentences(random: Random, name: string, city: string): string[] {
  const founded = int(random, 1870, 1990);
  return [
    `${name} is a professional ${pick(random, ['football', 'basketball', 'ice hockey', 'baseball'])} club based in ${city}, competing in the ${pick(random, LEAGUES)}.`,
    `Founded in ${founded}, the club played its first ${int(random, 5, 60)} seasons at ${pick(random, LAST)} Park before moving to the ${thousands(int(random, 8, 80) * 1000)}-seat ${pick(random, LAST)} Stadium in ${founded + int(random, 20, 100)}.`,
    `The team has won the league title ${int(random, 1, 20)} times, most recently in ${int(random, 1990, 2023)}, and the national cup ${int(random, 0, 12)} times.`,
    `Its record goalscorer is ${pick(random, FIRST)} ${pick(random, LAST)}, with ${int(random, 100, 400)} goals between ${int(random, 1950, 1990)} and ${int(random, 1991, 2010)}.`,
    `The club's traditional colours are ${pick(random, ['red', 'blue', 'green', 'black', 'claret'])} and ${pick(random, ['white', 'gold', 'sky blue', 'black'])}, and its nickname is "the ${pick(random, NOUNS)}s".`,
  ];
}

/** A wiki-18 style passage: `"Title"\ntext`, text cut to about `words` words (passages end mid-sentence). */
function passage(random: Random, docTitle: string, sentences: string[], words: number, oddity: boolean): string {
  const pool = [...sentences];
  // Start at the lead most of the time, elsewhere otherwise (a later chunk of the same article).
  if (chance(random, 0.4)) pool.push(...pool.splice(0, int(random, 1, 3)));
  for (let at = pool.length; at > 0; at--) if (chance(random, 0.8)) pool.splice(at, 0, pick(random, PROSE));
  if (oddity) pool.splice(int(random, 1, Math.min(3, pool.length)), 0, pick(random, ODDITIES));
  const out: string[] = [];
  for (const s of pool) {
    out.push(...s.split(' '));
    if (out.length >= words) break;
  }
  return `"${docTitle}"\n${out.slice(0, words).join(' ')}`;
}

// ── scenarios ──────────────────────────────────────────────────────────────────────────────────────
interface Topic { question: string; answer: string; queries: string[]; docs: () => Array<{ title: string; sentences: string[] }> }

function topic(random: Random): Topic {
  const kind = int(random, 0, 5);
  if (kind <= 1) {
    const w = work(random);
    const noun = w.kind === 'film' ? 'film' : w.kind === 'album' ? 'album' : 'novel';
    const asks = w.kind === 'film'
      ? [[`who directed the film ${w.title.toLowerCase()}?`, w.creator.name], [`who starred in ${w.title.toLowerCase()} (${w.year} film)?`, w.star.name], [`when was the movie ${w.title.toLowerCase()} released?`, String(w.year)]]
      : w.kind === 'album'
        ? [[`who released the album ${w.title.toLowerCase()}?`, w.creator.name], [`what year did ${w.title.toLowerCase()} album come out?`, String(w.year)]]
        : [[`who wrote the novel ${w.title.toLowerCase()}?`, w.creator.name], [`when was ${w.title.toLowerCase()} published?`, String(w.year)]];
    const [question, answer] = pick(random, asks);
    const followUp = w.kind === 'film' ? `${w.creator.name} director` : `${w.creator.name} ${w.creator.occupation}`;
    return {
      question, answer,
      queries: [`${w.title} ${noun}`, followUp, `${w.title} ${w.year} ${noun} ${pick(random, ['cast', 'release date', 'author', 'reception'])}`],
      docs: () => [
        { title: w.kind === 'film' ? `${w.title} (${w.year} film)` : w.title, sentences: workSentences(random, w) },
        { title: w.creator.name, sentences: personSentences(random, w.creator) },
        { title: `${w.title} (${pick(random, ['soundtrack', 'play', 'TV series', 'song'])})`, sentences: workSentences(random, work(random)) },
        { title: w.star.name, sentences: personSentences(random, w.star) },
      ],
    };
  }
  if (kind <= 3) {
    const p = person(random);
    const asks: Array<[string, string]> = [[`when was ${p.name.toLowerCase()} born?`, p.born], [`where was ${p.name.toLowerCase()} born?`, `${p.city}, ${p.country}`], [`what nationality is ${p.name.toLowerCase()}?`, p.demonym]];
    if (p.died) asks.push([`when did ${p.name.toLowerCase()} die?`, p.died]);
    const [question, answer] = pick(random, asks);
    const namesake = { ...person(random), first: p.first, last: p.last, name: `${p.first} ${p.last} (${pick(random, OCCUPATIONS)})` };
    return {
      question, answer,
      queries: [p.name, `${p.name} ${p.occupation} biography`, `${p.name} ${p.city}`],
      docs: () => [
        { title: p.name, sentences: personSentences(random, p) },
        { title: namesake.name, sentences: personSentences(random, { ...namesake, name: `${p.first} ${p.last}` }) },
        { title: p.city, sentences: placeSentences(random, p.city, p.country) },
        { title: `${p.last} family`, sentences: personSentences(random, person(random)) },
      ],
    };
  }
  if (kind === 4) {
    const [city, country] = pick(random, PLACES);
    const [question, answer] = pick(random, [[`what is the population of ${city.toLowerCase()}?`, thousands(int(random, 40, 4000) * 1000)], [`which river flows through ${city.toLowerCase()}?`, `${pick(random, NOUNS)} River`], [`when was ${city.toLowerCase()} founded?`, String(int(random, 800, 1900))]] as Array<[string, string]>);
    return {
      question, answer,
      queries: [`${city} ${country}`, `${city} history`, `${city} population census`],
      docs: () => [
        { title: city, sentences: placeSentences(random, city, country) },
        { title: `History of ${city}`, sentences: placeSentences(random, city, country) },
        { title: `${city} (disambiguation)`, sentences: placeSentences(random, city, pick(random, PLACES)[1]) },
        { title: `University of ${city}`, sentences: placeSentences(random, city, country) },
      ],
    };
  }
  const city = pick(random, PLACES)[0];
  const team = `${city} ${pick(random, TEAMS)}`;
  const [question, answer] = pick(random, [[`how many times has ${team.toLowerCase()} won the league?`, String(int(random, 1, 20))], [`when was ${team.toLowerCase()} founded?`, String(int(random, 1870, 1990))], [`who is the all time top scorer for ${team.toLowerCase()}?`, `${pick(random, FIRST)} ${pick(random, LAST)}`]] as Array<[string, string]>);
  return {
    question, answer,
    queries: [team, `${team} history`, `${team} records`],
    docs: () => [
      { title: team, sentences: teamSentences(random, team, city) },
      { title: `History of ${team}`, sentences: teamSentences(random, team, city) },
      { title: city, sentences: placeSentences(random, city, pick(random, PLACES)[1]) },
      { title: `${city} ${pick(random, TEAMS)} F.C.`, sentences: teamSentences(random, team, city) },
    ],
  };
}

const THINK_FIRST = [
  (q: string) => `I need to find ${q.replace(/\?$/, '')}. Let me search for it.`,
  (q: string) => `To answer this question, I need to know ${q.replace(/\?$/, '')}. I will search.`,
  (q: string) => `The question asks ${q} I don't know this for sure, so I should search.`,
  () => 'I am not sure about this. Let me search for the relevant information first.',
];
const THINK_MORE = [
  (a: string) => `The documents mention ${a} but do not answer the question directly. I need more information.`,
  () => 'The results are about a different person with the same name. I should refine the search.',
  (a: string) => `Doc 1 mentions ${a}, but I want to confirm this with another search.`,
  () => 'The information is not sufficient. Let me search with a more specific query.',
];
const THINK_LAST = [
  (a: string) => `Based on the search results, the answer is ${a}.`,
  (a: string) => `Doc 1 says it clearly: ${a}.`,
  (a: string) => `From the information above, I can conclude that the answer is ${a}.`,
  (a: string, q: string) => `The question was ${q} The documents agree that it is ${a}.`,
];

const THINK_EXTRA = [
  'The search results should give the exact details.',
  'I should be careful, since several people or places may share this name.',
  'I will keep the answer short, as the question asks for a single fact.',
  'If the first result is not clear, I can search again with a more specific query.',
  'Let me also check the dates, in case the documents disagree.',
];

export interface RealisticStats {
  scenarios: number;
  searches: number[];
  invalidTurns: number;
  oddDocuments: number;
  documents: number;
}

/** `count` distinct, deterministic Search-R1 training-like scenarios. */
export function realisticScenarios(count = REALISTIC_SCENARIOS, seed = REALISTIC_SEED): { scenarios: Scenario[]; stats: RealisticStats } {
  const random = prng(seed);
  const stats: RealisticStats = { scenarios: count, searches: [0, 0, 0, 0], invalidTurns: 0, oddDocuments: 0, documents: 0 };
  const scenarios: Scenario[] = [];
  const seen = new Set<string>();
  while (scenarios.length < count) {
    const t = topic(random);
    if (seen.has(t.question)) continue;
    seen.add(t.question);
    const u = random();
    const searches = u < 0.12 ? 0 : u < 0.8 ? 1 : u < 0.96 ? 2 : 3;
    stats.searches[searches]++;
    const think = (text: string) => {
      const body = chance(random, 0.35) ? `${text} ${pick(random, THINK_EXTRA)}` : text;
      return chance(random, 0.3) ? `<think>\n${body}\n</think>\n` : `<think> ${body} </think>\n`;
    };
    const turns: string[] = [];
    const corpus: Record<string, string[]> = {};
    const pool = t.docs();
    if (chance(random, 0.03)) {
      // An invalid turn: a thought with no action (the invalid-action message follows).
      turns.push(`<think> ${pick(random, THINK_FIRST)(t.question)} </think>`);
      stats.invalidTurns++;
    }
    for (let s = 0; s < searches; s++) {
      const query = t.queries[s];
      const thought = s === 0 ? pick(random, THINK_FIRST)(t.question) : pick(random, THINK_MORE)(t.answer);
      turns.push(`${chance(random, 0.04) ? '' : think(thought)}<search> ${query} </search>`);
      const order = [0, 1, 2, 3];
      for (let i = 3; i > 0; i--) { const j = int(random, 0, i); [order[i], order[j]] = [order[j], order[i]]; }
      order.length = 3;
      if (s === 0 && !order.includes(0)) order[0] = 0;
      corpus[query] = order.map((k) => {
        const odd = chance(random, 0.025);
        stats.documents++;
        if (odd) stats.oddDocuments++;
        return passage(random, pool[k].title, pool[k].sentences, int(random, 85, 105), odd);
      });
      // Fresh sentences for the next search (the same articles, other chunks).
      const more = t.docs();
      pool.splice(0, pool.length, ...more);
    }
    turns.push(`${think(pick(random, THINK_LAST)(t.answer, t.question))}<answer> ${t.answer} </answer>`);
    scenarios.push({ id: `realistic-${String(scenarios.length).padStart(3, '0')}`, note: 'realistic Search-R1 training rollout (bench/realistic.ts)', question: t.question, turns, corpus });
  }
  return { scenarios, stats };
}

export interface RealisticLines {
  lines: SampleLine[];
  stats: RealisticStats;
  /** Prompt tokens of each rollout. */
  promptTokens: number[];
  observationTokens: number;
  actionTokens: number;
  /** Scenarios whose documents were shortened to keep every information block within 500 tokens. */
  shortened: number;
}

/** The realistic scenarios built for one tokenizer, as sample lines (half of them with prompt_length). */
export function realisticLines(tokenizerPackage: string, folder: string, count = REALISTIC_SCENARIOS, seed = REALISTIC_SEED): RealisticLines {
  const tokenizer: Tokenizer = loadSampleTokenizer({ folder, tokenizerPackage });
  const { scenarios, stats } = realisticScenarios(count, seed);
  const random = prng(seed ^ 0x9e3779b9);
  let observationTokens = 0;
  let actionTokens = 0;
  const promptTokens: number[] = [];
  let shortened = 0;
  const lines = scenarios.map((scenario) => {
    let rollout;
    for (;;) {
      try {
        rollout = runSearchR1(tokenizer, scenario);
        break;
      } catch (error) {
        // An information block over max_obs_length (500 tokens): Search-R1 would cut it; keep the corpus
        // free of per-line options instead and drop 8 words from each document of this scenario.
        if (!/exceeds/.test(String(error))) throw error;
        shortened++;
        const corpus = scenario.corpus ?? {};
        for (const query of Object.keys(corpus)) corpus[query] = corpus[query].map((doc) => doc.split(' ').slice(0, -8).join(' '));
      }
    }
    for (const s of rollout.segments) {
      if (s.kind === 'observation') observationTokens += s.ids.length;
      if (s.kind === 'action') actionTokens += s.ids.length;
    }
    promptTokens.push(rollout.segments[0].ids.length);
    const line: SampleLine = { id: scenario.id, tokens: rollout.segments.flatMap((s) => s.ids), mask: maskOf(rollout.segments) };
    if (chance(random, 0.5)) line.prompt_length = rollout.segments[0].ids.length;
    return line;
  });
  return { lines, stats, promptTokens, observationTokens, actionTokens, shortened };
}

/** What the realistic corpus is made of (per tokenizer), for the report. */
export interface RealisticInfo {
  distinctRollouts: number;
  tokensPerRollout: { mean: number; min: number; median: number; max: number };
  promptTokens: { mean: number; min: number; max: number };
  /** Observation tokens / response tokens (response = everything after the prompt). */
  observationShareOfResponse: number;
  observationShareOfAll: number;
  actionShareOfAll: number;
  /** Rollouts with 0, 1, 2, 3 searches. */
  searches: number[];
  invalidTurns: number;
  documents: number;
  /** Documents carrying a `<`/`>`, CJK or an emoji. */
  oddDocuments: number;
  shortenedScenarios: number;
  promptLengthStated: number;
  /** ms to build the distinct rollouts with runSearchR1 (0 when read from the cache). */
  buildMs: number;
  cached: boolean;
}

const here = dirname(fileURLToPath(import.meta.url));

/** The distinct realistic rollouts for one tokenizer, from `cacheDir` when nothing they depend on changed. */
function cachedLines(target: (typeof TARGETS)[number], cacheDir: string): { built: RealisticLines; buildMs: number; cached: boolean } {
  const require = createRequire(import.meta.url);
  const hash = createHash('sha1');
  hash.update(`${REALISTIC_SCENARIOS} ${REALISTIC_SEED}\n`);
  for (const file of [join(here, 'realistic.ts'), join(here, 'corpus.ts'), join(here, '..', 'samples', 'build', 'search-r1.ts'), require.resolve(`${target.tokenizer}/tokenizer.json`), require.resolve(`${target.tokenizer}/tokenizer_config.json`)]) {
    hash.update(readFileSync(file));
  }
  const file = join(cacheDir, `realistic-${target.name}-${hash.digest('hex').slice(0, 12)}.json`);
  if (existsSync(file)) {
    try {
      return { built: JSON.parse(readFileSync(file, 'utf8')) as RealisticLines, buildMs: 0, cached: true };
    } catch { /* rebuild */ }
  }
  const t0 = performance.now();
  const built = realisticLines(target.tokenizer, target.folder);
  const buildMs = performance.now() - t0;
  mkdirSync(cacheDir, { recursive: true });
  writeFileSync(file, JSON.stringify(built));
  return { built, buildMs, cached: false };
}

/** The realistic corpus for one tokenizer: the distinct rollouts (built or cached), tiled to ~targetTokens. */
export function buildRealisticCorpus(target: (typeof TARGETS)[number], targetTokens: number, cacheDir: string, seed = 0x7a6d62): { corpus: Corpus; info: RealisticInfo } {
  const { built, buildMs, cached } = cachedLines(target, cacheDir);
  const corpus = tileCorpus('realistic', target.tokenizer, built.lines, [], targetTokens, seed);
  const sizes = built.lines.map((line) => line.tokens.length).sort((a, b) => a - b);
  const total = sizes.reduce((a, b) => a + b, 0);
  const prompt = built.promptTokens.reduce((a, b) => a + b, 0);
  const round = (x: number, digits = 3) => +x.toFixed(digits);
  return {
    corpus,
    info: {
      distinctRollouts: built.lines.length,
      tokensPerRollout: { mean: round(total / sizes.length, 1), min: sizes[0], median: sizes[sizes.length >> 1], max: sizes[sizes.length - 1] },
      promptTokens: { mean: round(prompt / built.promptTokens.length, 1), min: Math.min(...built.promptTokens), max: Math.max(...built.promptTokens) },
      observationShareOfResponse: round(built.observationTokens / (total - prompt)),
      observationShareOfAll: round(built.observationTokens / total),
      actionShareOfAll: round(built.actionTokens / total),
      searches: built.stats.searches,
      invalidTurns: built.stats.invalidTurns,
      documents: built.stats.documents,
      oddDocuments: built.stats.oddDocuments,
      shortenedScenarios: built.shortened,
      promptLengthStated: built.lines.filter((line) => line.prompt_length !== undefined).length,
      buildMs: Math.round(buildMs),
      cached,
    },
  };
}
