import type { AbortLike } from '../deadline.js';
import type { ChatMessage, ModelReply, ModelRequest } from '../providers/types.js';
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
export async function runTurn(env: RuntimeEnv, req: TurnRequest): Promise<ModelReply> {
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
  // Built by assignment and the reply returned as the provider made it: a spread into a literal defines the
  // properties after it one by one, and leaves an object of another shape each time it is read.
  const request: ModelRequest = { model: resolved.model.model, messages: req.messages, signal: req.signal };
  if (agent?.systemPrompt) request.system = agent.systemPrompt;
  if (thinking) request.thinking = thinking;
  return provider.complete(request);
}

/** The timeout of a turn as the agent: the request's, else the agent's, else the default. */
export function agentTimeoutSeconds(env: RuntimeEnv, agentId: string): number {
  return (
    env.config.agents.list.find((a) => a.id === agentId)?.timeoutSeconds ?? env.config.agents.defaults.timeoutSeconds
  );
}
