/**
 * Typed errors with stable codes. Control flow branches on `code` (or `instanceof`), never on messages.
 * Messages are for people: they say what is wrong and what to change.
 */

/** Codes a caller of the HTTP ingress can see in `{ ok: false, error, code }`. */
export type HttpErrorCode =
  | 'query_token'
  | 'method_not_allowed'
  | 'unauthorized'
  | 'forbidden' // the client address is not in the route's allowFrom
  | 'rate_limited'
  | 'payload_too_large'
  | 'body_timeout'
  | 'request_timeout'
  | 'body_aborted'
  | 'invalid_json'
  | 'invalid_payload'
  | 'not_found'
  | 'session_key_not_allowed'
  | 'agent_not_allowed'
  | 'invalid_agent' // an agentId that names no configured agent
  | 'model_not_allowed'
  | 'invalid_channel'
  | 'idempotency_conflict'
  | 'mapping_failed'
  | 'unavailable'
  | 'internal';

/** A model provider's failure (src/providers): each carries whether a later retry may succeed. */
export type ProviderErrorCode =
  | 'provider_http' // the server answered with a non-2xx status
  | 'provider_bad_response' // 2xx but not the protocol's shape (garbage, malformed JSON, empty choices)
  | 'provider_unreachable' // connection refused / reset / DNS
  | 'provider_timeout' // aborted by the run's timeout
  | 'provider_command_failed'; // command provider: non-zero exit, spawn failure

/** A messaging channel's failure (src/channels). */
export type ChannelErrorCode =
  | 'channel_config' // the channel's own config cannot be used (e.g. an unreadable service-account file)
  | 'channel_plugin_invalid' // a plugin module does not export a usable channel
  | 'irc_unavailable' // IRC: a step failed that may succeed later
  | 'irc_rejected'; // IRC: the server refused for good

/** A transform module could not be imported, or does not export a usable function. */
export type TransformErrorCode = 'transform_invalid' | 'transform_load_failed' | 'transform_loader_disposed';

/**
 * Why a mapped hook could not be turned into an action (answered 500 `mapping_failed`). Logged as `code`: the log
 * line carries this word and the thrown error's class, never its message (which may quote the payload), unless
 * `logging.level` is `debug`.
 */
export type MappingFailureCode =
  | 'transform_unavailable' // the module was refused when the generation was compiled
  | 'transform_load_failed' // importing it failed, or it exports no usable function
  | 'transform_threw' // the transform threw (or rejected)
  | 'transform_bad_result' // it returned something other than an object, null or undefined
  | 'transform_invalid_field'; // a field it returned breaks the rules of a direct request

/** The CLI could not do what was asked (src/cli): each is exit code 1 with a message naming what it looked for. */
export type CliErrorCode =
  | 'cli_usage' // a bad argument or option value
  | 'cli_config_missing' // a config file that was named (--config, $HOOKGATE_CONFIG) does not exist
  | 'cli_store_missing' // no store to read: the commands that read it never create one
  | 'cli_token_missing' // send found no hook token: it never invents one
  | 'cli_not_found' // the id or key asked for is not in the store or the config
  | 'cli_write_failed' // init could not create a directory or write a file it was asked to
  | 'cli_unreachable' // send could not reach the service (or gmail setup/stop could not reach Google)
  | 'cli_google'; // gmail setup/stop: a Google API or token endpoint refused the call

/** `hookgate store copy` (src/store/copy-to-postgres.ts) refused its source or its destination. */
export type StoreCopyErrorCode =
  | 'copy_source_missing' // no file at --from
  | 'copy_source_invalid' // not a hookgate SQLite store (or unreadable)
  | 'copy_source_outdated' // an older hookgate's schema: migrate it first (start hookgate once on it)
  | 'copy_source_newer' // written by a newer hookgate than this one
  | 'copy_source_in_use' // a hookgate service still runs on it (a live node row)
  | 'copy_destination_invalid' // --to is not a PostgreSQL URL
  | 'copy_destination_schema' // a source table or column has no counterpart in the PostgreSQL schema
  | 'copy_destination_conflict'; // the destination holds other records under the same keys
/** A store's schema is not the one this hookgate runs on (src/store/schema-version.ts): the message says what to run. */
export type StoreSchemaErrorCode =
  | 'store_schema_outdated' // an older hookgate's schema: only `serve` and `store migrate` bring it up to date
  | 'store_schema_newer'; // written by a newer hookgate: every command refuses it
/** Codes of the admin listener (src/admin) besides the ingress's `unauthorized`, `not_found` and `unavailable`. */
export type AdminErrorCode =
  | 'invalid_query' // a query parameter (or cursor) the endpoint cannot use: the message names it
  | 'not_retryable' // retry asked of a run or delivery that is not failed / dead-lettered
  | 'run_pruned_or_unknown'; // no run by that id: never accepted here, or finished and pruned (hooks.runRetentionDays)

/**
 * A call hookgate made to another service (src/http) failed: the other side said no, or never answered. Callers
 * branch on these (or on `transient`, which is derived from them), never on a message.
 */
export type OutboundErrorCode =
  | 'outbound_refused' // a 3xx (not followed) or a 4xx other than 408/429: the request is wrong and will stay wrong
  | 'outbound_busy' // 408, 429 or 5xx: the other side may take it later
  | 'outbound_unreachable' // no answer: connection refused or reset, DNS, TLS
  | 'outbound_timeout' // no answer within the time given
  | 'outbound_bad_response'; // an answer, but not what the protocol promises (not JSON, too large)

/** The runtime gave work up (src/runtime). */
export type RuntimeErrorCode = 'lease_lost'; // a lease could not be renewed in time (store unreachable, or another node took it): the work stops

/**
 * Every code hookgate's errors carry: the one catalogue. Add a code here, in its family, before throwing it.
 */
export type ErrorCode =
  | HttpErrorCode
  | ProviderErrorCode
  | ChannelErrorCode
  | TransformErrorCode
  | MappingFailureCode
  | CliErrorCode
  | StoreCopyErrorCode
  | StoreSchemaErrorCode
  | AdminErrorCode
  | RuntimeErrorCode
  | OutboundErrorCode
  | 'config_invalid'
  | 'store_unavailable';

export class HookgateError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** An error that maps 1:1 onto an HTTP answer of the ingress. */
export class HttpError extends HookgateError {
  declare readonly code: HttpErrorCode;
  readonly status: number;
  readonly headers: Record<string, string> | undefined;
  constructor(status: number, code: HttpErrorCode, message: string, headers?: Record<string, string>) {
    super(code, message);
    this.status = status;
    this.headers = headers;
  }
}

/** An answer of the admin listener (src/admin): the ingress's codes it shares, or its own. */
export class AdminError extends HookgateError {
  declare readonly code: HttpErrorCode | AdminErrorCode;
  readonly status: number;
  readonly headers: Record<string, string> | undefined;
  constructor(status: number, code: HttpErrorCode | AdminErrorCode, message: string, headers?: Record<string, string>) {
    super(code, message);
    this.status = status;
    this.headers = headers;
  }
}

/** A query parameter the endpoint cannot use: 400 `invalid_query`, the message naming the parameter. */
export function invalidQuery(param: string, why: string): AdminError {
  return new AdminError(400, 'invalid_query', `${param}: ${why}`);
}

/** Seconds a caller is told to wait (`Retry-After`) when the store cannot take its request. */
export const STORE_RETRY_AFTER_S = 1;

/**
 * The store could not take the request (disk full, file unwritable, database connection lost): 503 `unavailable`
 * with `Retry-After`. Nothing was accepted, so the same request can be sent again.
 */
export function storeUnavailable(): HttpError {
  return new HttpError(503, 'unavailable', 'the store is unavailable; nothing was accepted, retry later', {
    'retry-after': String(STORE_RETRY_AFTER_S),
  });
}

/**
 * A mapped hook could not be turned into an action (its transform threw, returned something unusable, or could not
 * be loaded): 500 `mapping_failed`. `reason` is short and never contains payload data; details go to the log.
 */
export function mappingFailed(reason: string): HttpError {
  return new HttpError(500, 'mapping_failed', `hook mapping failed: ${reason}`);
}

export interface ConfigIssue {
  /** Key path in the config file, e.g. `hooks.mappings[2].transform.module`. */
  path: string;
  message: string;
}

/** The config cannot be used. Carries every problem found, each by key path. */
export class ConfigError extends HookgateError {
  readonly issues: ConfigIssue[];
  constructor(issues: ConfigIssue[], file?: string) {
    super('config_invalid', formatIssues(issues, file));
    this.issues = issues;
  }
}

export function formatIssues(issues: ConfigIssue[], file?: string): string {
  const head = file ? `invalid config ${file}:` : 'invalid config:';
  return [head, ...issues.map((i) => `  ${i.path || '(root)'}: ${i.message}`)].join('\n');
}

/** The durable store could not do what was asked (disk full, locked, connection lost...). */
export class StoreError extends HookgateError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('store_unavailable', message, options);
  }
}

/** The store's schema is older (and this command may not migrate it) or newer than this hookgate's. */
export class StoreSchemaError extends HookgateError {
  declare readonly code: StoreSchemaErrorCode;
  readonly found: number;
  readonly known: number;
  constructor(code: StoreSchemaErrorCode, message: string, found: number, known: number) {
    super(code, message);
    this.found = found;
    this.known = known;
  }
}

/** `hookgate store copy` cannot copy: the message says what to do (stop the service, migrate the source, ...). */
export class StoreCopyError extends HookgateError {
  declare readonly code: StoreCopyErrorCode;
  constructor(code: StoreCopyErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

/** A CLI command failed for a reason the user can fix; main prints `hookgate: <message>` and exits 1. */
export class CliError extends HookgateError {
  declare readonly code: CliErrorCode;
  constructor(code: CliErrorCode, message: string) {
    super(code, message);
  }
}

/** Formats a key path from zod-style segments: ['hooks', 'mappings', 2, 'id'] → hooks.mappings[2].id */
export function keyPath(segments: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const s of segments) {
    if (typeof s === 'number') out += `[${s}]`;
    else out += out ? `.${String(s)}` : String(s);
  }
  return out;
}
