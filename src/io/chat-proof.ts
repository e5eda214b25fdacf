/**
 * One rendering instead of two, where it is proven to give the same texts.
 *
 * Attribution (chat.ts) needs the conversation rendered as it is (`whole`) and with every assistant message's
 * content replaced by a mark (`marked`). Both come from one rendering where each assistant content `c` is given
 * as `open + c + close` (two private-use characters the conversation never holds), if the template's control
 * flow cannot tell the three contents apart (`c`, `open + c + close`, `mark`) and it writes each content only
 * by carrying it into the text: then the wrapped rendering is `whole` with the marks added, and `marked` with
 * each `open … close` replaced by `mark`. This module watches every node the interpreter evaluates
 * (load.ts RenderWatch) and allows a value holding a mark to be used only in ways that give the same result
 * for all three contents:
 *
 * - carried: written out, joined with `+` / `~`, set to a variable, passed to a macro, put in a list or
 *   namespace, returned by `and` / `or` / a conditional, iterated over (lists and mappings), read by key;
 * - asked what it is: truthiness (every wrapped content is non-empty, as is `mark`), `is string`, `is defined`,
 *   `is none` and the other type tests, a mapping's keys (`'tool_calls' in message`), a list's length;
 * - `needle in content` for a needle written by the template, when it is false (a needle holds no mark, so
 *   it is in `open + c + close` exactly when in `c`; were it there, `mark` would answer otherwise);
 * - `strip()`, `lstrip()`, `rstrip()` (which @huggingface/jinja runs as JS trim, trimStart, trimEnd: it ignores
 *   their argument) and `| trim`, where `c` has no whitespace at the end they strip, so they strip nothing
 *   from any of the three; `| tojson`, `| safe`, `| string`.
 *
 * Anything else that touches a marked value (`==`, slicing, `split`, `startswith`, `| length` of a string,
 * a filter that compares or reorders, a builtin called with it) stops the rendering: the caller renders twice,
 * as before. So does a rendering whose text does not hold each content exactly once, in order, between its
 * marks. Where this proof holds, `whole` and `marked` are the texts the two renderings give, character for
 * character, and attribution goes on from them unchanged.
 */
import type { ChatMessage, RenderWatch } from '../tokenizer/load.ts';

/** What the interpreter hands around: @huggingface/jinja's runtime values (`type`, `value`) and AST nodes (`type`, fields). */
interface Value { type: string; value: unknown }
interface Node { type: string; [field: string]: unknown }
interface Scope { lookupVariable(name: string): Value }

/** Thrown inside the rendering to stop it where the proof fails. */
class Unproven extends Error {}

const TYPE_TESTS = new Set(['defined', 'undefined', 'none', 'string', 'mapping', 'iterable', 'sequence', 'number', 'integer', 'boolean', 'callable', 'true', 'false', 'odd', 'even', 'float']);
const CONTAINERS = new Set(['ArrayValue', 'TupleValue', 'ObjectValue', 'KeywordArgumentsValue', 'NamespaceValue']);
const STRIPS = new Set(['strip', 'lstrip', 'rstrip']);
const CONTAINER_METHODS = new Set(['get', 'items', 'keys', 'values']);
const CONTAINER_FILTERS = new Set(['length', 'count', 'first', 'last', 'reverse', 'list']);

/** May a conversation be rendered once? Every assistant message is exactly `{role, content}` with content non-empty text. */
export function provable(messages: ChatMessage[]): boolean {
  let assistants = 0;
  for (const message of messages) {
    if (message.role !== 'assistant') continue;
    assistants++;
    const keys = Object.keys(message);
    if (keys.length !== 2 || keys[0] !== 'role' || keys[1] !== 'content' || typeof message.content !== 'string' || message.content === '') return false;
  }
  return assistants > 0;
}

export class RenderProof implements RenderWatch {
  private depth = 0;
  /** Set when the rendering went through this watch: texts() proves nothing about a rendering it did not see. */
  private watched = false;
  /** Per open frame: the children whose value holds a mark, as (node, value) pairs; undefined while none. */
  private readonly children: Array<unknown[] | undefined> = [];
  /** Lists, mappings and namespaces that hold a marked value. */
  private readonly containers = new Set<object>();
  /** Functions made from a marked value: a wrapped content's strip methods, a marked mapping's get/items/keys/values. */
  private readonly strips = new Map<object, { name: string; text: string }>();
  private readonly methods = new Set<object>();
  private readonly macros = new Set<object>();

  constructor(private readonly open: string, private readonly close: string) {}

  /** The messages as the template gets them: the assistant contents wrapped; registered once converted (see `leave`). */
  wrap(messages: ChatMessage[]): ChatMessage[] {
    return messages.map((message) => (message.role === 'assistant' ? { role: 'assistant', content: `${this.open}${message.content as string}${this.close}` } : message));
  }

  enter(node: unknown, environment?: unknown): number {
    const depth = this.depth++;
    if (depth === 0) {
      this.watched = true;
      this.found(node as Node, environment as Scope, undefined as unknown as Value);
    }
    this.children[depth] = undefined;
    return depth;
  }

  unwind(depth: number): void {
    this.depth = depth;
  }

  leave(depth: number, node: unknown, environment: unknown, value: unknown): void {
    this.depth = depth;
    // The interpreter evaluates missing nodes too (a slice's start), to undefined: nothing to see.
    if (node === undefined || node === null) return;
    const at = node as Node;
    const result = value as Value;
    const marked = this.children[depth];
    if (marked !== undefined) {
      for (let i = 0; i < marked.length; i += 2) {
        if (!this.allowed(at, environment as Scope, result, marked[i] as Node, marked[i + 1] as Value)) throw new Unproven(`${at.type} uses a marked value`);
      }
      if (result && CONTAINERS.has(result.type)) this.register(result);
    }
    const type = at.type;
    if (type === 'Macro') this.macros.add((environment as Scope).lookupVariable((at.name as { value: string }).value));
    else if (type === 'Identifier' && (at.value === 'loop' || at.value === 'varargs' || at.value === 'kwargs')) this.found(at, environment as Scope, result);
    if (depth === 0 || result === undefined || result === null) return;
    // Most values are texts without a mark: told at once.
    const inner = result.value;
    if (typeof inner === 'string' ? inner.includes(this.open) : this.holdsMark(result)) (this.children[depth - 1] ??= []).push(at, result);
  }

  /**
   * Does this value hold a mark? Texts by their characters (a text made from a marked one by the uses allowed
   * keeps both marks); lists, mappings and functions by where they came from.
   */
  private holdsMark(value: Value | undefined): boolean {
    if (value === undefined || value === null) return false;
    const inner = value.value;
    if (typeof inner === 'string') return inner.includes(this.open);
    if (typeof inner === 'function') return this.strips.has(value) || this.methods.has(value);
    if (inner === null || typeof inner !== 'object') return false;
    if (this.containers.has(value)) return true;
    // A namespace is changed in place (`set ns.x = …`): looked into each time.
    if (value.type === 'NamespaceValue') for (const item of (inner as Map<string, Value>).values()) if (this.holdsMark(item)) return true;
    return false;
  }

  /**
   * The lists and mappings that hold a mark without a node having made them from a marked value: the messages
   * as the template got them (converted before the first node), a loop's `loop` (its previtem, nextitem), a
   * macro's `varargs` and `kwargs`.
   */
  private found(node: Node, environment: Scope, result: Value): void {
    if (node.type === 'Program') {
      const messages = environment.lookupVariable('messages');
      if (messages?.type !== 'ArrayValue') return;
      for (const message of messages.value as Value[]) {
        if (message?.type !== 'ObjectValue') continue;
        const content = (message.value as Map<string, Value>).get('content');
        if (typeof content?.value === 'string' && content.value.includes(this.open)) {
          this.containers.add(message);
          this.containers.add(messages);
        }
      }
    } else if (result?.type === 'ObjectValue' || result?.type === 'ArrayValue') {
      // A loop's `loop` (previtem, nextitem), a macro's `varargs` and `kwargs`: made by the interpreter from values
      // it was handed, no node's doing.
      const items = result.type === 'ArrayValue' ? (result.value as Value[]) : (result.value as Map<string, Value>).values();
      for (const item of items) if (this.holdsMark(item)) { this.register(result); return; }
    }
  }

  /**
   * A list or mapping that holds a mark, and the lists and mappings in it that do: the pairs a mapping's items()
   * makes are the interpreter's, and a loop may take them one by one.
   */
  private register(container: Value): void {
    if (this.containers.has(container)) return;
    this.containers.add(container);
    const inner = container.value;
    if (container.type === 'NamespaceValue' || inner === null || typeof inner !== 'object') return;
    const items = Array.isArray(inner) ? (inner as Value[]) : (inner as Map<string, Value>).values();
    for (const item of items) {
      if (item?.type !== 'ArrayValue' && item?.type !== 'TupleValue' && item?.type !== 'ObjectValue') continue;
      const nested = item.type === 'ObjectValue' ? (item.value as Map<string, Value>).values() : (item.value as Value[]);
      for (const value of nested) if (this.holdsMark(value)) { this.register(item); break; }
    }
  }

  /** A wrapped content as it was given (`open c close`, one of each): its `c`, else undefined. */
  private content(value: Value): string | undefined {
    const text = value.value;
    if (typeof text !== 'string' || text.length < 2 || text[0] !== this.open || text[text.length - 1] !== this.close) return undefined;
    if (text.indexOf(this.open, 1) >= 0 || text.lastIndexOf(this.close, text.length - 2) >= 0) return undefined;
    return text.slice(1, -1);
  }

  private isText(value: Value): boolean {
    return typeof value.value === 'string';
  }

  private allowed(node: Node, scope: Scope, result: Value, child: Node, value: Value): boolean {
    switch (node.type) {
      case 'Program':
        return this.isText(value);
      case 'If':
        return child === node.test || this.isText(value);
      case 'For': {
        const iterable = node.iterable as Node;
        if (child === iterable || (iterable.type === 'SelectExpression' && (child === iterable.lhs || child === iterable.test))) return !this.isText(value);
        return this.isText(value);
      }
      case 'Set': {
        const assignee = node.assignee as Node;
        if (child === node.value) {
          if (assignee.type === 'Identifier') return true;
          // Into a namespace: it holds a marked value from now on.
          const target = assignee.type === 'MemberExpression' ? (assignee.object as Node) : undefined;
          if (target?.type !== 'Identifier') return false;
          this.containers.add(scope.lookupVariable(target.value as string));
          return true;
        }
        if (assignee.type === 'MemberExpression' && child === assignee.object) return true;
        return this.isText(value);
      }
      case 'BinaryExpression': {
        const operator = (node.operator as { value: string }).value;
        if (operator === 'and' || operator === 'or' || operator === '+' || operator === '~') return true;
        if ((operator === 'in' || operator === 'not in') && child === node.right) {
          if (value.type === 'ObjectValue') return true;
          return this.content(value) !== undefined && result.value === (operator === 'not in');
        }
        return false;
      }
      case 'UnaryExpression':
        return (node.operator as { value: string }).value === 'not';
      case 'Ternary':
        return true;
      case 'TestExpression':
        return child === node.operand && TYPE_TESTS.has((node.test as { value: string }).value);
      case 'FilterExpression': {
        if (child !== node.operand) return false;
        const filter = node.filter as Node;
        const name = filter.type === 'Identifier' ? (filter.value as string) : filter.type === 'CallExpression' && (filter.callee as Node).type === 'Identifier' ? ((filter.callee as Node).value as string) : undefined;
        if (name === 'tojson' || name === 'safe' || name === 'string') return true;
        if (name === 'trim' && filter.type === 'Identifier') {
          const text = this.content(value);
          return text !== undefined && !/^\s|\s$/.test(text);
        }
        return name !== undefined && CONTAINER_FILTERS.has(name) && !this.isText(value);
      }
      case 'MemberExpression': {
        if (child !== node.object) return false;
        const property = node.property as Node;
        if (!this.isText(value)) {
          if (result?.type !== 'FunctionValue') return true;
          if (node.computed || !CONTAINER_METHODS.has(property.value as string)) return false;
          this.methods.add(result);
          return true;
        }
        const text = this.content(value);
        if (node.computed || text === undefined || !STRIPS.has(property.value as string)) return false;
        this.strips.set(result, { name: property.value as string, text });
        return true;
      }
      case 'CallExpression': {
        if (child === node.callee) {
          const strip = this.strips.get(value);
          if (strip === undefined) return this.methods.has(value);
          // JS trim / trimStart / trimEnd, whatever the argument: nothing to strip from c, open or mark.
          return (strip.name === 'rstrip' || !/^\s/.test(strip.text)) && (strip.name === 'lstrip' || !/\s$/.test(strip.text));
        }
        // Arguments (and a macro's body and defaults) are carried only into a macro or a namespace, called by
        // name (looked up again here, in the scope the call looked it up in).
        const name = node.callee as Node;
        if (name.type !== 'Identifier') return false;
        const callee = scope.lookupVariable(name.value as string);
        return this.macros.has(callee) || (name.value === 'namespace' && callee.type === 'FunctionValue' && !this.macros.has(callee));
      }
      case 'ArrayLiteral':
      case 'TupleLiteral':
      case 'ObjectLiteral':
        return true;
      default:
        return false;
    }
  }

  /**
   * From the wrapped rendering: `whole` (the marks taken out) and `marked` (each content with its marks replaced
   * by `mark`), when each content stands in it once, in order, exactly as given. Else undefined.
   */
  texts(rendered: string, contents: string[], mark: string): { whole: string; marked: string } | undefined {
    if (!this.watched) return undefined;
    let whole = '';
    let marked = '';
    let at = 0;
    for (const content of contents) {
      const open = rendered.indexOf(this.open, at);
      if (open < 0 || rendered.indexOf(this.close, at) < open) return undefined;
      const close = open + 1 + content.length;
      if (rendered.charCodeAt(close) !== this.close.charCodeAt(0) || !rendered.startsWith(content, open + 1)) return undefined;
      const between = rendered.slice(at, open);
      whole += between + content;
      marked += between + mark;
      at = close + 1;
    }
    const rest = rendered.slice(at);
    if (rest.includes(this.open) || rest.includes(this.close)) return undefined;
    return { whole: whole + rest, marked: marked + rest };
  }
}

export function isUnproven(error: unknown): boolean {
  return error instanceof Unproven;
}
