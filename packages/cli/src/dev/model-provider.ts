/** The model provider the reference agents will use, decided from the environment as they decide it. */
export interface ModelProviderChoice {
  provider: 'bedrock' | 'openai' | 'offline';
  /** Why, in plain words. */
  reason: string;
}

type Env = Readonly<Record<string, string | undefined>>;

const set = (env: Env, name: string) => Boolean(env[name]?.trim());

/**
 * Mirrors the examples' rule (examples/models config): `AGENTRT_MODEL_PROVIDER` when valid; else
 * Bedrock with AWS credentials in the environment, OpenAI with `OPENAI_API_KEY`, else offline.
 */
export function chooseModelProvider(env: Env): ModelProviderChoice {
  const requested = env['AGENTRT_MODEL_PROVIDER']?.trim().toLowerCase();
  if (requested === 'bedrock' || requested === 'openai' || requested === 'offline') {
    return { provider: requested, reason: `AGENTRT_MODEL_PROVIDER=${requested}` };
  }
  const awsVars = [
    'AWS_PROFILE',
    'AWS_WEB_IDENTITY_TOKEN_FILE',
    'AWS_CONTAINER_CREDENTIALS_FULL_URI',
    'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
  ].filter((name) => set(env, name));
  if (set(env, 'AWS_ACCESS_KEY_ID') && set(env, 'AWS_SECRET_ACCESS_KEY'))
    awsVars.unshift('AWS_ACCESS_KEY_ID');
  if (awsVars.length > 0)
    return { provider: 'bedrock', reason: `AWS credentials found (${awsVars.join(', ')})` };
  if (set(env, 'OPENAI_API_KEY')) return { provider: 'openai', reason: 'OPENAI_API_KEY is set' };
  return { provider: 'offline', reason: 'no AWS credentials and no OPENAI_API_KEY' };
}
