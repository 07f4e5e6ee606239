// The config.toml that points the real `codex` CLI at the fake provider: the fake's Responses API over HTTP
// rather than a WebSocket, one retry of a dropped stream, no update check, no analytics and no plugin sync
// (which would call GitHub and chatgpt.com).
export function codexConfig(baseUrl: string): string {
  return [
    'model_provider = "fake"',
    'check_for_update_on_startup = false',
    '[analytics]',
    'enabled = false',
    '[features]',
    'plugins = false',
    '[model_providers.fake]',
    'name = "fake"',
    `base_url = "${baseUrl}"`,
    'env_key = "OPENAI_API_KEY"',
    'wire_api = "responses"',
    'supports_websockets = false',
    'request_max_retries = 0',
    'stream_max_retries = 1',
  ].join('\n') + '\n';
}
