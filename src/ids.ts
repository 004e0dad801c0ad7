import { randomBytes } from 'node:crypto';

let pool = Buffer.alloc(0);
let offset = 0;

/** `n` random bytes' offset in the pool: one CSPRNG call per 4 KiB instead of one per id. */
function take(n: number): number {
  if (offset + n > pool.length) {
    pool = randomBytes(4096);
    offset = 0;
  }
  offset += n;
  return offset - n;
}

/** `bytes` random bytes from the CSPRNG, as lowercase hex (e.g. a boundary id no payload can guess). */
export function randomHex(bytes: number): string {
  const at = take(bytes);
  return pool.toString('hex', at, at + bytes);
}

/** Lowercase hex digits, as bytes. */
const HEX = Buffer.from('0123456789abcdef', 'latin1');
/** Where each of the id's 16 bytes starts in its text (the dashes sit between). */
const BYTE_AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
/** The id's text, written in place and read out as one flat string: a hex string cut and joined cost more per id. */
const text = Buffer.from('00000000-0000-0000-0000-000000000000', 'latin1');

function put(i: number, byte: number): void {
  const at = BYTE_AT[i]!;
  text[at] = HEX[byte >> 4]!;
  text[at + 1] = HEX[byte & 15]!;
}

/**
 * A new id: a UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then random bits. Time-ordered ids land at the end
 * of the store's unique indexes instead of at random pages, which makes an insert into a large table much cheaper.
 */
export function newId(): string {
  const at = take(10);
  const ms = Date.now();
  const high = Math.floor(ms / 0x1000000); // the top 24 of the 48 bits
  const low = ms - high * 0x1000000;
  put(0, (high >> 16) & 0xff);
  put(1, (high >> 8) & 0xff);
  put(2, high & 0xff);
  put(3, (low >> 16) & 0xff);
  put(4, (low >> 8) & 0xff);
  put(5, low & 0xff);
  put(6, (pool[at]! & 0x0f) | 0x70); // version 7
  put(7, pool[at + 1]!);
  put(8, (pool[at + 2]! & 0x3f) | 0x80); // variant 10
  for (let i = 3; i < 10; i++) put(6 + i, pool[at + i]!);
  return text.toString('latin1', 0, 36);
}
