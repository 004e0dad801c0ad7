/**
 * `hookgate mappings test NAME --data JSON`: what a request to `{hooks.path}/NAME` would become, rendered by the
 * service's own routes (templates, transforms, presets, fan-out, policy), with nothing queued and no service needed.
 * A signed mapping is signed here with its own secret from the config, so its verifier runs as for a real sender.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Command } from 'commander';
import type { Config } from '../config/load.js';
import { normalizeMatchPath } from '../config/schema/hooks.js';
import { CliError, HttpError } from '../errors.js';
import { buildHooksContext, type HooksContext } from '../hooks/context.js';
import { loadRecipientCheck } from '../channels/registry.js';
import type { HookAction } from '../hooks/dispatch.js';
import { candidates, type CompiledMapping, matchMapping } from '../hooks/mappings/compile.js';
import { MappingFailure } from '../hooks/mappings/render.js';
import { signedQuery, signRequest } from '../hooks/mappings/signatures.js';
import {
  createHookRoutes,
  type HookRequest,
  type RouteResult,
  SENDER_ANSWERS,
  type SenderAnswer,
} from '../hooks/routes.js';
import { createLogger } from '../log.js';
import { logSafe } from '../text-safe.js';
import { fullConfig } from './context.js';
import { printJson } from './format.js';
import { configOption, jsonOption } from './options.js';
import { type BodyOpts, collect, parseHeader, requestBody } from './request-input.js';
import { isFormContentType } from '../form-body.js';

interface TestOpts extends BodyOpts {
  header: string[];
  config?: string;
  json?: boolean;
}

export function addMappingsCommands(program: Command): void {
  const mappings = program.command('mappings').description('hook mappings (hooks.mappings and presets)');
  mappings
    .command('test')
    .description(
      'render the mapping a request to NAME would reach and print the action it would queue (nothing is queued)',
    )
    .argument('<name>', 'the mapped hook name (path under hooks.path), e.g. github')
    .option('--data <body>', 'the body (JSON unless --content-type says otherwise): inline, @FILE, or - for stdin')
    .option(
      '--form <name=value>',
      'a form field (repeatable), as application/x-www-form-urlencoded; @FILE: an encoded form body',
      collect,
      [],
    )
    .option('--content-type <type>', 'the Content-Type of --data (default application/json)')
    .option(
      '-H, --header <name:value>',
      'a request header (repeatable), e.g. for match.headers: -H x-github-event:pull_request',
      collect,
      [],
    )
    .addOption(jsonOption())
    .addOption(configOption())
    .action((name: string, o: TestOpts) => testMapping(name, o));
}

async function testMapping(name: string, o: TestOpts): Promise<void> {
  const { config } = fullConfig(o.config);
  const { raw, contentType, payload } = requestBody(o);
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload))
    throw new CliError('cli_usage', '--data must be a JSON object, as the service requires');
  const headers: Record<string, string> = {
    'content-type': contentType,
    ...Object.fromEntries(o.header.map(parseHeader)),
  };
  const subPath = normalizeMatchPath(name);

  const { result, signer } = await resolveLocally(config, subPath, raw, payload as Record<string, unknown>, headers);
  const scheme = signer?.signature?.scheme;
  if (o.json) return printJson({ ...result, signed: scheme ?? null });
  process.stdout.write(`${describe(result, subPath, signer).join('\n')}\nnothing was queued\n`);
}

export type LocalResult = Exclude<RouteResult, { kind: 'none' | 'unauthorized' }>;

/**
 * What the service's routes make of a request to `{hooks.path}/<subPath>` (also `hookgate connect --test`), nothing
 * queued; a signed mapping's request is signed here with its own secret. A request the service would refuse is a
 * CliError saying the answer it would give.
 */
export async function resolveLocally(
  config: Config,
  subPath: string,
  raw: Buffer,
  payload: Record<string, unknown>,
  headers: Record<string, string>,
): Promise<{ result: LocalResult; signer: CompiledMapping | undefined }> {
  const ctx = buildHooksContext(config, 1, [], await loadRecipientCheck(config.channels));
  // As the ingress: a form body is parsed only on a path whose verifier reads the body (a signature); else it is JSON.
  if (isFormContentType(headers['content-type']) && !ctx.routes.plan(subPath).verifier.needsBody) {
    throw new CliError(
      'cli_usage',
      'the service would answer 400 invalid_json: a form body is read only on a path whose mappings verify a ' +
        'signature (Slack, Twilio...); this path takes JSON',
    );
  }
  const now = Date.now();
  const signer = signerOf(ctx, subPath, payload, headers);
  const rawHeaders: IncomingHttpHeaders = signer?.signature
    ? { ...headers, ...signRequest(signer.signature, raw, now) }
    : headers;
  // The query string the scheme signs (Twilio's `bodySHA256`), as the sender would send it.
  const rawQuery = signer?.signature ? signedQuery(signer.signature, raw).slice(1) || undefined : undefined;
  // The service's warnings (a capped fan-out, a transform's complaint) go to stderr; stdout stays the result.
  const routes = createHookRoutes({ logger: createLogger('warn', { destination: process.stderr, pretty: false }) });
  let result: RouteResult;
  try {
    // As a request that presented the hook token; a signed one goes through the path's verifier, as the service does.
    const credentials = signer
      ? await verifySigned(ctx, subPath, raw, rawHeaders, rawQuery, payload, now)
      : { tokenVerified: true };
    result = await routes.resolve({
      ctx,
      subPath,
      payload,
      rawBody: raw,
      headers,
      rawHeaders,
      query: new URLSearchParams(rawQuery),
      rawQuery,
      now,
      ...credentials,
    });
  } catch (err) {
    if (err instanceof HttpError)
      throw new CliError('cli_usage', `the service would answer ${err.status} ${err.code}: ${err.message}`);
    if (err instanceof MappingFailure)
      throw new CliError(
        'cli_usage',
        `the service would answer 500 mapping_failed: ${err.reason}${err.detail ? ` (${err.detail})` : ''}`,
      );
    throw err;
  }
  if (result.kind === 'none')
    throw new CliError('cli_not_found', `no mapping or preset matches "${subPath}" (the service would answer 404)`);
  if (result.kind === 'unauthorized') throw new CliError('cli_usage', `the service would answer 401: ${result.reason}`);
  return { result, signer };
}

/**
 * The mapping whose secret signs the request, on a signature-authenticated path: the one that matches, or, when none
 * does, the path's first signed candidate (what the sender of an event no mapping takes presents). Undefined when the
 * request goes with the hook token (another path, or a matching mapping without a signature).
 */
function signerOf(
  ctx: HooksContext,
  subPath: string,
  payload: Record<string, unknown>,
  headers: Record<string, string>,
): CompiledMapping | undefined {
  if (ctx.routes.plan(subPath).verifier.scheme !== 'signature') return undefined;
  const matched = matchMapping(ctx.routes.mapped, subPath, payload, headers);
  if (matched) return matched.signature ? matched : undefined;
  return candidates(ctx.routes.mapped, subPath).find((m) => m.signature !== undefined);
}

/** The path's verifier over the signed request, as the service runs it before the parse: a refusal is its 401. */
async function verifySigned(
  ctx: HooksContext,
  subPath: string,
  rawBody: Buffer,
  rawHeaders: IncomingHttpHeaders,
  rawQuery: string | undefined,
  payload: unknown,
  now: number,
): Promise<Pick<HookRequest, 'tokenVerified' | 'signatures'>> {
  const verdict = await ctx.routes
    .plan(subPath)
    .verifier.verify({ rawHeaders, rawQuery, now, hookToken: undefined, rawBody, peek: () => payload });
  if (!verdict.ok) throw new HttpError(401, 'unauthorized', verdict.reason ?? 'missing or invalid signature');
  return { tokenVerified: false, ...(verdict.signatures ? { signatures: verdict.signatures } : {}) };
}

/** How `hookgate mappings test` says what a sender's expected answer is. */
function senderAnswerText(answer: SenderAnswer): string {
  const body = SENDER_ANSWERS[answer].body;
  return body === '' ? '200 with an empty body' : `200 ${body}`;
}

/** The result as lines for people: the mapping reached, and each action with its rendered message. */
export function describe(r: LocalResult, subPath: string, signer?: CompiledMapping): string[] {
  const scheme = signer?.signature?.scheme;
  const via = (id: string | null) =>
    `mapping ${id ?? '(direct)'}${scheme ? ` (signed here as ${scheme} with its secret)` : ''}`;
  if (r.kind === 'unmatched') {
    const answer = r.senderAnswer ? senderAnswerText(r.senderAnswer) : '200 {"ok":true,"ignored":true}';
    return [
      `no mapping or preset matches "${subPath}" with this body and these headers` +
        ` (signed here as ${r.scheme} with the secret of mapping ${signer?.id ?? '?'})`,
      `  → ignored: the service would answer ${answer} and record it as unmatched (with the hook token instead of a signature: 404)`,
    ];
  }
  if (r.kind === 'skip')
    return [
      `${via(r.mappingId)} → skipped: the service would answer ${r.senderAnswer ? senderAnswerText(r.senderAnswer) : '204'} (a transform returned null, or the fan-out had no items)`,
    ];
  if (r.kind === 'reply') return [`${via(r.mappingId)} → a handshake answered ${r.status} ${JSON.stringify(r.body)}`];
  if (r.kind === 'gmailPush')
    return [
      `the Gmail push receiver → a notification of ${r.push.account} at history ${r.push.historyId} (fetched by the service)`,
    ];
  const lines = [
    `${via(r.mappingId)} → ${r.actions.length} action${r.actions.length > 1 ? 's' : ''}${r.dropped ? ` (${r.dropped} fan-out items over hooks.maxFanOut dropped)` : ''}`,
  ];
  for (const a of r.actions) lines.push(...describeAction(a));
  return lines;
}

function describeAction(a: HookAction): string[] {
  if (a.kind === 'wake') {
    const trust = a.untrusted ? ' (untrusted: shown wrapped at the heartbeat)' : '';
    return [`  wake (${a.mode}) for session ${a.sessionKey}${trust}: ${logSafe(a.text, 300)}`];
  }
  const r = a.run;
  return [
    `  agent run "${r.name}" as ${r.agentId} in session ${r.sessionKey} (${r.sessionMode}), model ${r.model ?? 'the agent default'}, timeout ${r.timeoutSeconds}s`,
    `    delivery: ${r.deliver ? `${r.channel}${r.to ? ` → ${r.to}` : ''}${r.accountId ? ` (account ${r.accountId})` : ''}` : 'off'}, wakeMode ${r.wakeMode}${r.allowUnsafeExternalContent ? ', UNWRAPPED (allowUnsafeExternalContent)' : ''}`,
    `    message: ${logSafe(r.message, 500)}`,
  ];
}
