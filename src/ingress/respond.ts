import type { ServerResponse } from 'node:http';
import type { HttpError } from '../errors.js';

const JSON_TYPE = 'application/json; charset=utf-8';

export function sendJson(res: ServerResponse, status: number, body: unknown, headers?: Record<string, string>): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': JSON_TYPE,
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

export function sendNoContent(res: ServerResponse): void {
  res.writeHead(204);
  res.end();
}

/** Every error body is `{ ok: false, error, code }`. */
export function sendError(res: ServerResponse, err: HttpError, extraHeaders?: Record<string, string>): void {
  sendJson(res, err.status, { ok: false, error: err.message, code: err.code }, { ...err.headers, ...extraHeaders });
}
