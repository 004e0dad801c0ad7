import type { AbortLike } from '../deadline.js';
import type { ChatMessage, ModelReply } from '../providers/types.js';
import { ProviderError } from '../providers/types.js';
import type { RuntimeEnv } from './env.js';

export interface TurnRequest {
  agentId: string;
  /** An explicit `<provider>/<model>` (a run's override), else the agent's, else `agents.defaults.model`. */
  model: string | null;
  thinking: string | null;
  messages: ChatMessage[];
  signal: AbortLike;
}

/** One model turn as an agent: resolves the agent's model and provider, its system prompt and thinking level. */
export async function runTurn(env: RuntimeEnv, req: TurnRequest): Promise<ModelReply & { model: string }> {
  const { config } = env;
  const agent = config.agents.list.find((a) => a.id === req.agentId);
  const ref = req.model ?? agent?.model ?? config.agents.defaults.model;
  const resolved = env.catalog.resolve(ref);
  if (!resolved.ok) throw new ProviderError('provider_bad_response', resolved.reason, { retryable: false });
  const provider = env.providers.get(resolved.model.providerId);
  if (!provider)
    throw new ProviderError('provider_unreachable', `provider "${resolved.model.providerId}" is not configured`, {
      retryable: false,
    });
  const thinking = req.thinking ?? agent?.thinking ?? config.agents.defaults.thinking;
  const reply = await provider.complete({
    model: resolved.model.model,
    ...(agent?.systemPrompt ? { system: agent.systemPrompt } : {}),
    messages: req.messages,
    ...(thinking ? { thinking } : {}),
    signal: req.signal,
  });
  return { ...reply, model: resolved.model.ref };
}

/** The timeout of a turn as the agent: the request's, else the agent's, else the default. */
export function agentTimeoutSeconds(env: RuntimeEnv, agentId: string): number {
  return (
    env.config.agents.list.find((a) => a.id === agentId)?.timeoutSeconds ?? env.config.agents.defaults.timeoutSeconds
  );
}
