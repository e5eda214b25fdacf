/**
 * Find, read, validate and compile a grammar. A grammar with any error never reaches the scanner;
 * every problem is reported as `file:line:column  path  message`.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { BUNDLED_GRAMMARS } from '../paths.ts';
import { checkGrammar, grammarIssue, type GrammarIssue } from './check.ts';
import { compileGrammar, type CompiledGrammar } from './compile.ts';
import { JsonSyntaxError, parseLocated, type Place } from './json.ts';
import { readGrammar } from './schema.ts';

export { BUNDLED_GRAMMARS };

export interface LocatedIssue extends GrammarIssue {
  file: string;
  place: Place;
}

/** `file:line:column: severity code at path: message`. */
export function formatIssue(issue: LocatedIssue): string {
  return `${issue.file}:${issue.place.line}:${issue.place.column}: ${issue.severity} ${issue.code}${issue.path ? ` at ${issue.path}` : ''}: ${issue.message}`;
}

export class GrammarError extends Error {
  constructor(readonly file: string, readonly issues: LocatedIssue[]) {
    super(`${file}: invalid grammar\n${issues.filter((issue) => issue.severity === 'error').map(formatIssue).join('\n')}`);
  }
}


export function bundledGrammarNames(): string[] {
  return readdirSync(BUNDLED_GRAMMARS).filter((file) => file.endsWith('.json')).map((file) => basename(file, '.json')).sort();
}

/** A bundled grammar's name (`search-r1`) or a path to a grammar file. */
/** A grammar is a few kilobytes; anything far larger is not one. */
const MAX_GRAMMAR_BYTES = 1 << 24;

export function resolveGrammarPath(spec: string, from = process.cwd()): string {
  if (spec.trim() === '') throw new Error(`no grammar given (bundled: ${bundledGrammarNames().join(', ')}; or give a file path)`);
  const bundled = resolve(BUNDLED_GRAMMARS, `${spec}.json`);
  if (/^[\w-]+$/.test(spec) && existsSync(bundled)) return bundled;
  const path = resolve(from, spec);
  if (existsSync(path)) {
    // A folder, a device (/dev/zero would never end) or a pipe is not a grammar file.
    const stat = statSync(path);
    if (stat.isDirectory()) throw new Error(`grammar ${spec} is a folder: give a grammar JSON file`);
    if (!stat.isFile()) throw new Error(`grammar ${spec} is not a regular file`);
    if (stat.size > MAX_GRAMMAR_BYTES) throw new Error(`grammar ${spec} is ${stat.size} bytes; a grammar file is at most ${MAX_GRAMMAR_BYTES}`);
    return path;
  }
  throw new Error(`grammar not found: ${spec} (bundled: ${bundledGrammarNames().join(', ')}; or give a file path)`);
}

export interface CheckedGrammar {
  file: string;
  compiled?: CompiledGrammar;
  issues: LocatedIssue[];
}

/** Read and check without throwing: what `tagmask grammar check` reports. */
export function checkGrammarFile(file: string): CheckedGrammar {
  const text = readFileSync(file, 'utf8');
  let located;
  try {
    located = parseLocated(text);
  } catch (error) {
    if (!(error instanceof JsonSyntaxError)) throw error;
    return { file, issues: [{ ...grammarIssue('grammar-shape', '', { detail: `not valid JSON: ${error.message}` }), file, place: error.place }] };
  }
  const placeOf = (path: string): Place => {
    // The nearest enclosing value that exists (a missing key is reported where its object starts).
    for (let at = path; ; at = at.replace(/(\.[^.[\]]+|\[[^\]]*\])$/, '')) {
      const place = located.places.get(at);
      if (place) return place;
      if (!at) return { line: 1, column: 1 };
    }
  };
  const locate = (issue: GrammarIssue): LocatedIssue => ({ ...issue, file, place: placeOf(issue.path) });

  const { grammar, issues: shapeIssues } = readGrammar(located.value);
  if (!grammar) {
    return { file, issues: shapeIssues.map((issue) => locate(grammarIssue('grammar-shape', issue.path, { detail: issue.message }))) };
  }
  const issues = checkGrammar(grammar).map(locate);
  if (issues.some((issue) => issue.severity === 'error')) return { file, issues };
  const compiled = compileGrammar(grammar);
  issues.push(...compiled.issues.map(locate));
  return { file, compiled, issues };
}

export function loadGrammar(spec: string, from?: string): CompiledGrammar {
  const file = resolveGrammarPath(spec, from);
  const checked = checkGrammarFile(file);
  if (!checked.compiled || checked.issues.some((issue) => issue.severity === 'error')) throw new GrammarError(file, checked.issues);
  return checked.compiled;
}
