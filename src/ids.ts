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

/**
 * A new id: a UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then random bits. Time-ordered ids land at the end
 * of the store's unique indexes instead of at random pages, which makes an insert into a large table much cheaper.
 */
export function newId(): string {
  const at = take(10);
  const b = Buffer.allocUnsafe(16);
  b.writeUIntBE(Date.now(), 0, 6);
  pool.copy(b, 6, at, at + 10);
  b[6] = (b[6]! & 0x0f) | 0x70; // version 7
  b[8] = (b[8]! & 0x3f) | 0x80; // variant 10
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
