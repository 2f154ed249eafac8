import { describe, expect, it } from 'vitest';
import { chooseModelProvider } from './model-provider.js';

describe('chooseModelProvider', () => {
  it.each([
    [{}, 'offline', 'no AWS credentials and no OPENAI_API_KEY'],
    [
      { AWS_ACCESS_KEY_ID: 'a', AWS_SECRET_ACCESS_KEY: 'b' },
      'bedrock',
      'AWS credentials found (AWS_ACCESS_KEY_ID)',
    ],
    [{ AWS_ACCESS_KEY_ID: 'a' }, 'offline', 'no AWS credentials and no OPENAI_API_KEY'],
    [{ AWS_PROFILE: 'dev', OPENAI_API_KEY: 'k' }, 'bedrock', 'AWS credentials found (AWS_PROFILE)'],
    [{ OPENAI_API_KEY: 'k' }, 'openai', 'OPENAI_API_KEY is set'],
    [{ OPENAI_API_KEY: '  ' }, 'offline', 'no AWS credentials and no OPENAI_API_KEY'],
    [{ AGENTRT_MODEL_PROVIDER: 'OFFLINE', OPENAI_API_KEY: 'k' }, 'offline', 'AGENTRT_MODEL_PROVIDER=offline'],
    [{ AGENTRT_MODEL_PROVIDER: 'nope', OPENAI_API_KEY: 'k' }, 'openai', 'OPENAI_API_KEY is set'],
  ])('%j → %s', (env, provider, reason) => {
    expect(chooseModelProvider(env)).toEqual({ provider, reason });
  });
});
