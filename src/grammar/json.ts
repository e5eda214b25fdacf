/**
 * JSON.parse that also remembers where each value starts, so a grammar problem can be reported as
 * `file:line:column` with its JSON path. Grammar files are small; clarity over speed here.
 */

export interface Place { line: number; column: number }

export interface LocatedJson {
  value: unknown;
  /** JSON path (`tags.think.open`, `handovers[0].replies[1]`) → where its value starts. */
  places: Map<string, Place>;
}

const MAX_DEPTH = 256;

export class JsonSyntaxError extends Error {
  constructor(message: string, readonly place: Place) {
    super(message);
  }
}

export function joinPath(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  const plain = /^[A-Za-z_$][\w$-]*$/.test(key);
  const part = plain ? key : JSON.stringify(key);
  if (!path) return plain ? key : `[${part}]`;
  return plain ? `${path}.${part}` : `${path}[${part}]`;
}

export function parseLocated(text: string): LocatedJson {
  const places = new Map<string, Place>();
  let at = 0;
  let line = 1;
  let lineStart = 0;

  const place = (): Place => ({ line, column: at - lineStart + 1 });
  const fail = (message: string): never => { throw new JsonSyntaxError(message, place()); };
  const skipSpace = () => {
    for (;;) {
      const c = text.charCodeAt(at);
      if (c === 10) { at++; line++; lineStart = at; } else if (c === 32 || c === 9 || c === 13) at++; else return;
    }
  };

  const parseString = (): string => {
    const start = at;
    at++;
    for (;;) {
      const c = text.charCodeAt(at);
      if (Number.isNaN(c) || c === 10) fail('unterminated string');
      if (c === 92) { at += 2; continue; }
      at++;
      if (c === 34) break;
    }
    try {
      return JSON.parse(text.slice(start, at)) as string;
    } catch {
      return fail('invalid string escape');
    }
  };

  let depth = 0;
  const parseValue = (path: string): unknown => {
    skipSpace();
    // Parsed by recursion: a file nested thousands of levels deep would overflow the stack. No grammar nests
    // more than a few levels, so a deep one is a located syntax error instead.
    if (depth >= MAX_DEPTH && (text[at] === '{' || text[at] === '[')) fail(`nested more than ${MAX_DEPTH} levels deep`);
    depth++;
    try {
      return parseNested(path);
    } finally {
      depth--;
    }
  };
  const parseNested = (path: string): unknown => {
    places.set(path, place());
    const c = text[at];
    if (c === '{') {
      at++;
      const object: Record<string, unknown> = {};
      skipSpace();
      if (text[at] === '}') { at++; return object; }
      for (;;) {
        skipSpace();
        if (text[at] !== '"') fail('expected a property name in double quotes');
        const keyPlace = place();
        const key = parseString();
        if (Object.hasOwn(object, key)) throw new JsonSyntaxError(`duplicate key ${JSON.stringify(key)}`, keyPlace);
        skipSpace();
        if (text[at] !== ':') fail('expected ":"');
        at++;
        // Defined, not assigned: a key named "__proto__" is an ordinary property, as JSON.parse makes it.
        Object.defineProperty(object, key, { value: parseValue(joinPath(path, key)), enumerable: true, writable: true, configurable: true });
        skipSpace();
        if (text[at] === ',') { at++; continue; }
        if (text[at] === '}') { at++; return object; }
        fail('expected "," or "}"');
      }
    }
    if (c === '[') {
      at++;
      const array: unknown[] = [];
      skipSpace();
      if (text[at] === ']') { at++; return array; }
      for (;;) {
        array.push(parseValue(joinPath(path, array.length)));
        skipSpace();
        if (text[at] === ',') { at++; continue; }
        if (text[at] === ']') { at++; return array; }
        fail('expected "," or "]"');
      }
    }
    if (c === '"') return parseString();
    const literal = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(at, at + 64));
    if (!literal) fail(c === undefined ? 'unexpected end of file' : `unexpected character ${JSON.stringify(c)}`);
    at += literal![0].length;
    return JSON.parse(literal![0]);
  };

  const value = parseValue('');
  skipSpace();
  if (at < text.length) fail('unexpected text after the JSON value');
  return { value, places };
}
