// Picks the provider client a persona names and checks, before anything runs, that its key is there.
import { NexusError } from '../../../../protocol/errors.js';
import type { ModelClient } from '../model.js';
import { anthropicClient } from './anthropic.js';
import { openaiClient } from './openai.js';

export type ProviderConfig = {
  provider: 'anthropic' | 'openai';
  model: string;
  base_url?: string | undefined;
  max_output_tokens?: number | undefined;
};

export const KEY_VARIABLES = { anthropic: 'ANTHROPIC_API_KEY', openai: 'OPENAI_API_KEY' } as const;

/**
 * The client for `cfg`, its key read from `env`.
 * @throws NexusError RUNTIME_UNCONFIGURED when the key variable is unset or empty: the run is refused at its start.
 */
export function createModelClient(cfg: ProviderConfig, env: NodeJS.ProcessEnv): ModelClient {
  const variable = KEY_VARIABLES[cfg.provider];
  const apiKey = env[variable]?.trim();
  if (!apiKey) {
    throw new NexusError('RUNTIME_UNCONFIGURED', `${variable} is not set, so the ${cfg.provider} provider cannot be called; set it in the environment the node or the command runs in`, {
      variable,
      provider: cfg.provider,
    });
  }
  const opts = { apiKey, model: cfg.model, baseURL: cfg.base_url, maxOutputTokens: cfg.max_output_tokens };
  return cfg.provider === 'anthropic' ? anthropicClient(opts) : openaiClient(opts);
}
