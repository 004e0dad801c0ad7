import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HttpError } from '../errors.js';
import { awaitsContinue, discardBody } from './body.js';

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

/**
 * An answer whose JSON is already written, ASCII only (`DispatchAnswer.json`): its length is its byte count, and
 * the headers are one literal, not a spread (every accepted request's answer).
 */
export function sendJsonAscii(res: ServerResponse, status: number, json: string, requestId: string): void {
  res.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': json.length, 'x-request-id': requestId });
  res.end(json);
}

/** 200 with an empty body: for senders that show or interpret any body they get (Slack slash commands). */
export function sendEmptyOk(res: ServerResponse, headers?: Record<string, string>): void {
  res.writeHead(200, { 'content-length': 0, ...headers });
  res.end();
}

/** A 200 with a fixed body (a sender's expected answer, hooks/routes.ts `SENDER_ANSWERS`); empty, no content type. */
export function sendFixedOk(
  res: ServerResponse,
  answer: { readonly body: string; readonly contentType?: string },
  headers?: Record<string, string>,
): void {
  if (answer.body === '') return sendEmptyOk(res, headers);
  const body = Buffer.from(answer.body, 'utf8');
  res.writeHead(200, {
    'content-type': answer.contentType ?? 'text/plain; charset=utf-8',
    'content-length': body.length,
    ...headers,
  });
  res.end(body);
}

export function sendNoContent(res: ServerResponse, headers?: Record<string, string>): void {
  res.writeHead(204, headers);
  res.end();
}

/** Aborted when the caller's connection closes before its answer was written: a held answer stops waiting. */
export function closedSignal(res: ServerResponse): AbortSignal {
  const ac = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) ac.abort();
  });
  return ac.signal;
}

/**
 * Every error body is `{ ok: false, error, code }`. A request refused while its client waits for `100 Continue`
 * (`Expect: 100-continue`, never invited) is answered with `Connection: close`: its body is not read.
 */
export function sendError(res: ServerResponse, err: HttpError, extraHeaders?: Record<string, string>): void {
  const close = res.req !== undefined && awaitsContinue(res.req) ? CLOSE : undefined;
  sendJson(
    res,
    err.status,
    { ok: false, error: err.message, code: err.code },
    { ...err.headers, ...extraHeaders, ...close },
  );
}

const CLOSE = { connection: 'close' } as const;

/**
 * An error answer to a request whose body was refused unread (413, or a body that failed mid-stream): the whole
 * answer is written at once with `Connection: close`, and the response ends (closing the connection) only after the
 * rest of the body has been read and dropped, within `discardBody`'s bounds, so every client reads the answer
 * instead of a connection reset.
 */
export function sendErrorDiscardingBody(
  req: IncomingMessage,
  res: ServerResponse,
  err: HttpError,
  headers?: Record<string, string>,
): void {
  const text = JSON.stringify({ ok: false, error: err.message, code: err.code });
  res.writeHead(err.status, {
    'content-type': JSON_TYPE,
    'content-length': Buffer.byteLength(text),
    ...err.headers,
    ...headers,
    connection: 'close',
  });
  res.write(text);
  void discardBody(req).then(() => res.end());
}
