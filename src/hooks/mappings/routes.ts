/**
 * Mapped hooks: `POST {hooks.path}/<name>` resolved through `hooks.mappings` (custom, in order) and then the presets.
 *
 * Per request: answer a verified sender handshake (handshakes.ts), else pick the first mapping whose `match.path`
 * equals the sub-path, whose `match.source` equals `payload.source` and whose `match.headers` are all present, have
 * the path's verifier authorize the request for that mapping (`authorizeMapping`: its signature, else the shared
 * token), render its action (per item for a `forEach` fan-out), apply its transform, validate, and apply the same
 * policy as a direct `/hooks/agent` request (render.ts).
 *
 * Authentication rule for signatures (docs/mappings.md, "7. Signatures"; docs/architecture.md, "Verifiers"): a
 * sub-path is *signature-capable* when any mapping that could match it by path (same `match.path`, or no
 * `match.path`) has a `signature`. On such a path the body is read before authentication; the candidates' signatures
 * are verified over the raw bytes before it is parsed (the path's `SignatureOrTokenVerifier`, verifier.ts: without a
 * valid token, a body none of them verifies is refused unparsed), then the mapping that actually matches (path +
 * source) decides, through `authorizeMapping` beside the verifier: its signature when it has one (the shared token is
 * then not an alternative), the shared token otherwise. When nothing matches: with the shared token, 404; with a
 * candidate's signature that verified, `unmatched` (a genuine sender's unmapped event: 200, ignored, not an auth
 * failure); with neither, 401 (so an unknown path still answers 401 before 404). Every other path is authenticated
 * by the token before the body is read, as for `/wake` and `/agent`.
 */
import type { SignatureConfig } from '../../config/schema/hooks.js';
import { HttpError, mappingFailed } from '../../errors.js';
import { logSafe } from '../../text-safe.js';
import type { HookAction } from '../dispatch.js';
import { fanOutPayloads } from '../fan-out.js';
import type { HookRequest, HookRoutes, HookRoutesOptions, RouteResult, SenderAnswer } from '../routes.js';
import { candidates, type Compiled, type CompiledMapping, matchMapping } from './compile.js';
import { handshakeOf } from './handshakes.js';
import { withoutPrototypeKeys } from './transforms.js';
import { presetContentSource, presetSessionKey } from './presets/index.js';
import {
  applyOverride,
  baseDraft,
  finish,
  headerRecord,
  MappingFailure,
  queryRecord,
  runTransform,
  transformUrl,
} from './render.js';
import { authorizeMapping, checkSignature } from './verifier.js';
import type { TemplateContext } from './templates.js';

/**
 * The resolution of every sub-path other than `wake`, `agent` and the base path itself, over the mappings the
 * request's generation compiled (`ctx.routes.mapped`, built with the generation: hooks/routes.ts `CompiledRoutes`).
 */
export function createMappedRoutes(opts: HookRoutesOptions): Pick<HookRoutes, 'resolve'> {
  const { logger } = opts;

  return {
    async resolve(input) {
      const c = input.ctx.routes.mapped;
      const headers = headerRecord(input.headers);

      // A sender's handshake, once its signature verifies on a mapping of this path, is answered whatever the match.
      const hs = handshakeOf(input.payload, headers);
      if (hs) {
        for (const cand of candidates(c, input.subPath)) {
          if (cand.signature?.scheme !== hs.scheme) continue;
          if (checkSignature(cand.signature, input).ok) {
            return { kind: 'reply', mappingId: cand.id, status: 200, body: hs.answer };
          }
        }
      }

      const m = matchMapping(c, input.subPath, input.payload, headers);
      const auth = authorizeMapping(m, input);
      if (!auth.ok)
        return { kind: 'unauthorized', reason: auth.reason, ...(auth.signature ? { signature: true } : {}) };
      if (!m) return auth.by === 'token' ? { kind: 'none' } : unmatched(c, input, headers, auth.verified!);
      const { deliveryId } = auth;
      if (input.form && !m.signature) {
        throw new HttpError(
          400,
          'invalid_json',
          'this mapping accepts JSON bodies only (form bodies are accepted by mappings with a signature)',
        );
      }
      const answer = senderAnswerOf(m.signature?.scheme, input.form);

      try {
        return await renderActions(logger, c, m, input, headers, answer, deliveryId);
      } catch (err) {
        if (err instanceof MappingFailure) throw failed(logger, input, m, err);
        throw err;
      }
    },
  };
}

/**
 * The answer a sender's form post expects instead of hookgate's JSON: Slack shows a slash command's answer to the user
 * and reads Interactivity's as a modal response (an empty 200); Twilio reads a messaging webhook's as TwiML (an
 * empty `<Response/>`: no reply).
 */
function senderAnswerOf(
  scheme: SignatureConfig['scheme'] | undefined,
  form: boolean | undefined,
): SenderAnswer | undefined {
  if (form !== true) return undefined;
  return scheme === 'slack' ? 'empty' : scheme === 'twilio' ? 'twiml' : undefined;
}

/** Senders that name their event in a header of their own, whatever the mappings match on. */
const EVENT_HEADERS: Partial<Record<SignatureConfig['scheme'], string>> = { github: 'x-github-event' };

/**
 * A genuine sender's request (a candidate's signature verified it) that no mapping takes: answered as ignored, so a
 * sender that disables a failing endpoint (Stripe, Svix) keeps delivering the events that are mapped. Slack's and
 * Twilio's form posts get the answer their sender expects. `event` (for the log line) is the sender's event header, else the first
 * header the path's mappings match on that the request carries.
 */
function unmatched(
  c: Compiled,
  input: HookRequest,
  headers: Record<string, string>,
  signature: SignatureConfig,
): RouteResult {
  const names = [
    EVENT_HEADERS[signature.scheme],
    ...candidates(c, input.subPath).flatMap((m) => m.headers?.map(([name]) => name) ?? []),
  ];
  const header = names.find((name) => name !== undefined && Object.hasOwn(headers, name));
  const answer = senderAnswerOf(signature.scheme, input.form);
  return {
    kind: 'unmatched',
    scheme: signature.scheme,
    ...(header !== undefined ? { event: { header, value: logSafe(headers[header]!, 100) } } : {}),
    ...(answer ? { senderAnswer: answer } : {}),
  };
}

/** A mapping that could not render its action: logged, answered 500 `mapping_failed`. */
function failed(
  logger: HookRoutesOptions['logger'],
  input: HookRequest,
  m: CompiledMapping,
  err: MappingFailure,
): HttpError {
  // The detail is an error message, and messages quote their input (V8's JSON.parse error quotes the payload it
  // choked on): only the code and the thrown class are logged unless the operator asked for debug.
  const detail = err.detail !== undefined && logger.isLevelEnabled('debug') ? { detail: err.detail } : {};
  (input.log ?? logger).warn(
    {
      path: logSafe(input.subPath, 100),
      mappingId: m.id,
      reason: err.reason,
      code: err.code,
      ...err.thrown,
      ...detail,
    },
    `hook mapping failed: ${err.reason}`,
  );
  return mappingFailed(err.reason);
}

type Items = {
  items: Array<Record<string, unknown>>;
  transformItems: Array<Record<string, unknown>> | undefined;
  dropped: number;
};

/** The matched mapping's actions: one per item (a `forEach` fan-out's, else the payload), through its transform. */
async function renderActions(
  logger: HookRoutesOptions['logger'],
  c: Compiled,
  m: CompiledMapping,
  input: HookRequest,
  headers: Record<string, string>,
  answer: SenderAnswer | undefined,
  deliveryId: string | undefined,
): Promise<RouteResult> {
  const fan = itemsOf(logger, m, input);
  const senderAnswer = answer ? { senderAnswer: answer } : {};
  if (fan === undefined) return { kind: 'skip', mappingId: m.id, ...senderAnswer };
  const { items, transformItems, dropped } = fan;
  const query = queryRecord(input.query);
  const now = new Date(input.now);
  const contentSource = presetContentSource(m.preset, input.subPath, input.payload);
  const actions: HookAction[] = [];
  for (const [i, payload] of items.entries()) {
    const tctx: TemplateContext = { payload, headers, query, path: input.subPath, now };
    let draft = baseDraft(m, tctx);
    if (m.preset !== undefined) {
      const key = presetSessionKey(m.preset, payload);
      if (key !== undefined) draft = { ...draft, sessionKey: key };
    }
    if (m.transform) {
      const url = transformUrl(input.ctx.config.hooks.path, input.subPath, input.rawQuery);
      const out = await runTransform(m, c, { payload: transformItems![i], headers, query, url, path: input.subPath });
      if (out === null) continue; // this item (or the whole request) is skipped
      if (out !== undefined) draft = applyOverride(draft, out);
    }
    actions.push(finish(draft, m, input, contentSource));
  }
  if (actions.length === 0) return { kind: 'skip', mappingId: m.id, ...senderAnswer };
  return {
    kind: 'actions',
    mappingId: m.id,
    actions,
    fanOut: m.forEach !== undefined,
    ...(deliveryId !== undefined ? { deliveryId } : {}),
    ...(dropped > 0 ? { dropped } : {}),
    ...senderAnswer,
  };
}

/** The items to render (the payload, or a `forEach` fan-out capped at `hooks.maxFanOut`); undefined when a fan-out has none. */
function itemsOf(logger: HookRoutesOptions['logger'], m: CompiledMapping, input: HookRequest): Items | undefined {
  const maxFanOut = input.ctx.config.hooks.maxFanOut;
  // What the transform sees: the same items, from a copy without prototype keys (see withoutPrototypeKeys).
  let transformItems: Array<Record<string, unknown>> | undefined;
  if (m.transform) {
    const safe = withoutPrototypeKeys(input.payload) as Record<string, unknown>;
    transformItems = m.forEach === undefined ? [safe] : fanOutPayloads(safe, m.forEach, maxFanOut).payloads;
  }
  if (m.forEach === undefined) return { items: [input.payload], transformItems, dropped: 0 };
  const fan = fanOutPayloads(input.payload, m.forEach, maxFanOut);
  if (fan.payloads.length === 0) return undefined;
  if (fan.dropped > 0) {
    (input.log ?? logger).warn(
      {
        path: logSafe(input.subPath, 100),
        mappingId: m.id,
        dispatched: fan.payloads.length,
        dropped: fan.dropped,
        maxFanOut,
      },
      `hook fan-out over "${m.forEach}" capped at ${fan.payloads.length} items: dropped ${fan.dropped}`,
    );
  }
  return { items: fan.payloads, transformItems, dropped: fan.dropped };
}
