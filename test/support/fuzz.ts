/**
 * Mutated requests for fuzzing the ingress, shared by the reliability suite (test/reliability/fuzz.test.ts, a few
 * thousand) and `npm run soak` (scripts/soak.mjs, up to 10⁶): random bytes, truncated JSON, huge numbers, deep
 * nesting, odd Content-Types, invalid UTF-8, byte flips of valid bodies, odd methods and paths. Seeded, so a failure
 * names the seed and index that reproduce it.
 */
import { connect } from 'node:net';
import type { HttpErrorCode } from '../../src/errors.js';
import { TOKEN } from './token.js';

/**
 * Every code the ingress may answer with: the `HttpErrorCode` catalogue (errors.ts), checked exhaustive by the
 * compiler, so a new code must be added here (and so documented) before a test accepts it.
 */
const CODES: Record<HttpErrorCode, true> = {
  query_token: true,
  method_not_allowed: true,
  unauthorized: true,
  forbidden: true,
  rate_limited: true,
  payload_too_large: true,
  body_timeout: true,
  request_timeout: true,
  body_aborted: true,
  invalid_json: true,
  invalid_payload: true,
  not_found: true,
  session_key_not_allowed: true,
  agent_not_allowed: true,
  invalid_agent: true,
  model_not_allowed: true,
  invalid_channel: true,
  idempotency_conflict: true,
  mapping_failed: true,
  unavailable: true,
  internal: true,
};
export const DOCUMENTED_CODES: ReadonlySet<string> = new Set(Object.keys(CODES));

/** mulberry32: small, fast, seedable. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
}

const PATHS = [
  '/hooks/wake',
  '/hooks/agent',
  '/hooks/wake',
  '/hooks/agent',
  '/hooks/github',
  '/hooks/nope',
  '/hooks',
  '/hooks/',
  '/',
  '/hooks/wake?token=x',
  '/hooks//wake',
  '/hooks/%00',
  '/hooks/a/../wake',
];
const TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=latin1',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/octet-stream',
  '',
  'json',
  'application/json;;;',
];
const NUMBERS = [
  '1e999',
  '-1e999',
  '123456789012345678901234567890123456789',
  `0.${'0'.repeat(400)}1`,
  '-0',
  '1e-400',
  '9'.repeat(5000),
];

export function fuzzRequest(rand: () => number): FuzzRequest {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const int = (n: number) => Math.floor(rand() * n);
  const valid = () =>
    rand() < 0.5
      ? { text: `fuzz ${int(1e6)}`, mode: 'next-heartbeat' }
      : { message: `fuzz ${int(1e6)}`, deliver: false, wakeMode: 'next-heartbeat' };
  const nest = (depth: number, open: string, close: string, inner = '1') =>
    open.repeat(depth) + inner + close.repeat(depth);
  const kinds: Array<() => Buffer | undefined> = [
    () => Buffer.from(Array.from({ length: int(2048) }, () => int(256))),
    () => {
      const s = JSON.stringify(valid());
      return Buffer.from(s.slice(0, int(s.length)));
    },
    () =>
      Buffer.from(`{"text":${pick(NUMBERS)},"mode":${pick(NUMBERS)},"timeoutSeconds":${pick(NUMBERS)},"message":"m"}`),
    () => Buffer.from(`{"text":"t","x":${nest(1 + int(20_000), '[', ']')}}`),
    () => Buffer.from(nest(1 + int(20_000), '{"a":', '}')),
    () => Buffer.from(nest(1 + int(5_000), '[', ']').slice(0, int(10_000))),
    () =>
      Buffer.concat([
        Buffer.from('{"text":"'),
        Buffer.from(pick([[0xff, 0xfe], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0x80]])),
        Buffer.from('","message":"x"}'),
      ]),
    () => {
      const b = Buffer.from(JSON.stringify(valid()));
      for (let i = 0; i < 1 + int(4); i++) b[int(b.length)] = int(256);
      return b;
    },
    () =>
      Buffer.from(
        JSON.stringify(
          pick([
            [],
            null,
            1,
            'str',
            true,
            [valid()],
            { text: 1 },
            { message: {} },
            { text: 't', mode: 'sometimes' },
            { message: 'm', channel: 'nowhere' },
            { message: 'm', sessionKey: 'x' },
            { message: 'm', timeoutSeconds: -1 },
          ]),
        ),
      ),
    () => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(valid()))]),
    () => Buffer.from(`{"__proto__":{"text":"p"},"constructor":{"prototype":{}},"text":"t","message":"m"}`),
    () => undefined,
    () => Buffer.from(JSON.stringify(valid())),
  ];
  const body = pick(kinds)();
  const headers: Record<string, string> = {};
  const auth = rand();
  if (auth < 0.85) headers.authorization = `Bearer ${TOKEN}`;
  else if (auth < 0.92) headers.authorization = `Bearer ${TOKEN.slice(0, int(TOKEN.length))}x`;
  else if (auth < 0.96) headers['x-openclaw-token'] = TOKEN;
  const type = pick(TYPES);
  if (type !== '') headers['content-type'] = type;
  // A stranger's address per request (the harness trusts 127.0.0.1 as a proxy), so wrong tokens lock out strangers,
  // never the loopback address every other request comes from.
  headers['x-forwarded-for'] = `10.${int(256)}.${int(256)}.${int(256)}`;
  if (rand() < 0.05) headers['x-github-event'] = pick(['push', 'ping', '', 'x'.repeat(300)]);
  if (rand() < 0.05) headers['idempotency-key'] = pick(['k', '', 'x'.repeat(500), `key-${int(50)}`]);
  const method = rand() < 0.9 ? 'POST' : pick(['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD']);
  return { method, path: pick(PATHS), headers, body: method === 'GET' || method === 'HEAD' ? undefined : body };
}

export interface Answer {
  status: number;
  text: string;
}

/** Whether an answer keeps the HTTP contract: no 5xx, and every 4xx a JSON `{ ok: false, error, code }` with a known code. */
export function contractViolation(method: string, a: Answer): string | undefined {
  if (a.status >= 500) return `status ${a.status}: ${a.text.slice(0, 200)}`;
  if (a.status < 400 || method === 'HEAD') return undefined;
  let body: unknown;
  try {
    body = JSON.parse(a.text);
  } catch {
    return `status ${a.status} with a body that is not JSON: ${a.text.slice(0, 200)}`;
  }
  const b = body as { ok?: unknown; error?: unknown; code?: unknown };
  if (b.ok !== false || typeof b.error !== 'string' || typeof b.code !== 'string')
    return `status ${a.status} body ${a.text.slice(0, 200)}`;
  if (!DOCUMENTED_CODES.has(b.code)) return `undocumented code ${b.code}`;
  return undefined;
}

export async function send(url: string, r: FuzzRequest): Promise<Answer> {
  const res = await fetch(url + r.path, { method: r.method, headers: r.headers, body: r.body });
  return { status: res.status, text: await res.text() };
}

/**
 * Raw bytes as a whole request on a fresh connection (a broken request line or headers: what fetch cannot send).
 * Resolves with the answer's status, or 0 when the server closed without one; never a 5xx expected.
 */
export function sendRaw(port: number, bytes: Buffer): Promise<number> {
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1');
    let got = '';
    const done = () => {
      sock.destroy();
      resolve(Number(/^HTTP\/1\.[01] (\d{3})/.exec(got)?.[1] ?? 0));
    };
    sock.setTimeout(3000, done);
    sock.on('data', (d) => {
      got += d.toString('latin1');
      if (got.includes('\r\n')) done();
    });
    sock.on('error', done);
    sock.on('close', done);
    sock.end(bytes);
  });
}

export function rawGarbage(rand: () => number): Buffer {
  const int = (n: number) => Math.floor(rand() * n);
  const pieces = [
    () => Buffer.from(Array.from({ length: 1 + int(512) }, () => int(256))),
    () =>
      Buffer.from(
        `POST /hooks/wake HTTP/1.1\r\nHost: x\r\nContent-Length: ${int(100)}\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n`,
      ),
    () =>
      Buffer.from(
        `POST /hooks/wake HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nTransfer-Encoding: chunked\r\n\r\n${int(99)}\r\n{"te`,
      ),
    () => Buffer.from(`GET /hooks/\x00\xff HTTP/1.1\r\n\r\n`, 'latin1'),
    () => Buffer.from(`POST /hooks/wake HTTP/9.9\r\nHost: x\r\n\r\n`),
    () => Buffer.from(`POST /hooks/wake HTTP/1.1\r\nHost: x\r\nX: ${'a'.repeat(20_000)}\r\n\r\n`),
  ];
  return pieces[int(pieces.length)]!();
}
