#!/usr/bin/env node
/**
 * The input/output floor of the CLI, as plain Node (no tsx, no tagmask code), run as a child process:
 *
 *     node bench/floor.mjs read  IN.jsonl            read in 16 MiB chunks, split lines, decode each to a string
 *     node bench/floor.mjs parse IN.jsonl            … and JSON.parse each line (the input floor)
 *     node bench/floor.mjs write IN.jsonl OUT.jsonl  … and write back {"id","mask"} per line (mask all 0,
 *                                                    same byte-per-token writer, temp file + fsync + rename)
 *     node bench/floor.mjs json  IN.jsonl OUT.jsonl  the JSON floor of issue 21: JSON.parse each line and write
 *                                                    JSON.stringify({id, mask}) with an all-ones mask (what a plain
 *                                                    script that rebuilds nothing costs; same reader and writer)
 *
 * It reads exactly like src/io/jsonl.ts so the difference to the CLI is tagmask's own work.
 * Prints one JSON line: {lines, tokens}.
 */
import { closeSync, createReadStream, fsyncSync, openSync, renameSync, writeSync } from 'node:fs';

const [mode, input, output] = process.argv.slice(2);
if (!['read', 'parse', 'write', 'json'].includes(mode) || !input || ((mode === 'write' || mode === 'json') && !output)) {
  process.stderr.write('usage: node bench/floor.mjs read|parse|write|json IN.jsonl [OUT.jsonl]\n');
  process.exit(2);
}

async function* lines(path) {
  let pending;
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 24 })) {
    const buffer = pending ? Buffer.concat([pending, chunk]) : chunk;
    let start = 0;
    for (let newline = buffer.indexOf(10, start); newline >= 0; newline = buffer.indexOf(10, start)) {
      if (newline > start) yield buffer.toString('utf8', start, newline);
      start = newline + 1;
    }
    pending = start < buffer.length ? buffer.subarray(start) : undefined;
  }
  if (pending && pending.length) yield pending.toString('utf8');
}

class Writer {
  buffer = Buffer.allocUnsafe(1 << 22);
  used = 0;
  constructor(path) {
    this.path = path;
    this.temporary = `${path}.tmp-${process.pid}`;
    this.fd = openSync(this.temporary, 'w');
  }
  reserve(bytes) {
    if (this.used + bytes <= this.buffer.length) return;
    this.flush();
    if (bytes > this.buffer.length) this.buffer = Buffer.allocUnsafe(bytes * 2);
  }
  write(text) {
    this.reserve(Buffer.byteLength(text));
    this.used += this.buffer.write(text, this.used);
  }
  writeMask(length) {
    this.reserve(length * 2 + 2);
    const buffer = this.buffer;
    let at = this.used;
    buffer[at++] = 0x5b;
    for (let i = 0; i < length; i++) {
      if (i > 0) buffer[at++] = 0x2c;
      buffer[at++] = 0x30;
    }
    buffer[at++] = 0x5d;
    this.used = at;
  }
  flush() {
    let at = 0;
    while (at < this.used) at += writeSync(this.fd, this.buffer, at, this.used - at);
    this.used = 0;
  }
  close() {
    this.flush();
    fsyncSync(this.fd);
    closeSync(this.fd);
    renameSync(this.temporary, this.path);
  }
}

async function main() {
  const writer = mode === 'write' || mode === 'json' ? new Writer(output) : undefined;
  let count = 0;
  let tokens = 0;
  let checksum = 0;
  for await (const text of lines(input)) {
    count++;
    if (mode === 'read') {
      checksum += text.length;
      continue;
    }
    const value = JSON.parse(text);
    tokens += value.tokens.length;
    if (mode === 'json') {
      writer.write(`${JSON.stringify({ id: value.id, mask: new Array(value.tokens.length).fill(1) })}\n`);
    } else if (writer) {
      writer.write(`{"id":${JSON.stringify(value.id ?? null)},"mask":`);
      writer.writeMask(value.tokens.length);
      writer.write('}\n');
    }
  }
  writer?.close();
  process.stdout.write(`${JSON.stringify({ lines: count, tokens, checksum })}\n`);
}

await main();
