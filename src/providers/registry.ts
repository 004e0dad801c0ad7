/** Builds the model providers of a config: every configured one by its `api`, plus the built-in `echo`. */
import { ECHO_PROVIDER_ID, type ProviderConfig } from '../config/schema/models.js';
import { createAnthropicProvider } from './anthropic-messages.js';
import { createCommandProvider, type CommandOptions } from './command.js';
import { createEchoProvider } from './echo.js';
import { createOpenAIChatProvider } from './openai-chat.js';
import type { ModelProvider } from './types.js';

export type ProvidersOptions = CommandOptions;

export function createProvider(id: string, config: ProviderConfig, options: ProvidersOptions = {}): ModelProvider {
  switch (config.api) {
    case 'openai-chat':
      return createOpenAIChatProvider(id, config, options);
    case 'anthropic-messages':
      return createAnthropicProvider(id, config, options);
    case 'command':
      return createCommandProvider(id, config, options);
    case 'echo':
      return createEchoProvider(id);
  }
}

/**
 * One provider per configured id, plus `echo` (the schema only lets `models.providers.echo` be an echo provider, so
 * the built-in one is never shadowed by something else).
 */
export function createProviders(
  providers: Record<string, ProviderConfig>,
  options: ProvidersOptions = {},
): Map<string, ModelProvider> {
  const map = new Map<string, ModelProvider>([[ECHO_PROVIDER_ID, createEchoProvider(ECHO_PROVIDER_ID)]]);
  for (const [id, config] of Object.entries(providers)) map.set(id, createProvider(id, config, options));
  return map;
}

/** Closes every provider (a command provider stops its running agents); one failing close does not stop the rest. */
export async function closeProviders(map: Map<string, ModelProvider>): Promise<void> {
  await Promise.allSettled([...map.values()].map((p) => p.close?.()));
}
