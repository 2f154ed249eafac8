import { describe, expect, it } from 'vitest';
import { parseJudgeAnswer } from './parse-answer.js';

describe('parseJudgeAnswer', () => {
  it('reads the JSON answer, also inside prose and code fences', () => {
    expect(parseJudgeAnswer('{"score": 0.8, "label": "Good", "explanation": "ok"}')).toEqual({
      ok: true,
      value: 0.8,
      label: 'Good',
      explanation: 'ok',
    });
    const fenced = 'Sure! Here is my verdict:\n```json\n{"score": "4", "reasoning": "mostly right"}\n```';
    expect(parseJudgeAnswer(fenced)).toEqual({
      ok: true,
      value: 0.8,
      label: 'Good',
      explanation: 'mostly right',
    });
  });

  it('skips braces that are not a verdict and falls back to a "score: x" line', () => {
    expect(parseJudgeAnswer('The {user} asked twice. {"note": 1} Score: 7/10')).toMatchObject({
      ok: true,
      value: 0.7,
    });
  });

  it('marks garbage, out-of-range and empty answers unreadable with an excerpt, never throwing', () => {
    for (const text of [
      '',
      'lorem ipsum',
      '{"score": 42}',
      '{"score": -1}',
      '{broken json',
      'x'.repeat(5000),
    ]) {
      const parsed = parseJudgeAnswer(text);
      expect(parsed.ok, text.slice(0, 20)).toBe(false);
      if (!parsed.ok) expect(parsed.errorMessage.length).toBeLessThan(300);
    }
  });
});
