import { type JudgeModel, type JudgeSettings } from './judge-model.js';
import { createOfflineJudge } from './offline-judge.js';
import { createBedrockJudge, createOpenAiJudge } from './remote-judges.js';

/** The judge the settings name; with none, the offline judge. */
export function createJudgeModel(settings: JudgeSettings): JudgeModel {
  switch (settings.provider) {
    case 'openai':
      return createOpenAiJudge(settings);
    case 'bedrock':
      return createBedrockJudge(settings);
    case 'offline':
      return createOfflineJudge(settings.modelId);
  }
}
