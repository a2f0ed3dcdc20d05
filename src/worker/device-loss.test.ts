import { describe, expect, it } from 'vitest';
import { EngineBusyError, MethodUnavailableError } from '../engine/engine';
import { GenerationError, type GenerationResult } from '../engine/events';
import { ContextLimitError } from '../engine/lm';
import { deviceWasLost } from './device-loss';

const never = { lost: new Promise<GPUDeviceLostInfo>(() => {}) };
const losing = (ms: number) => ({
  lost: new Promise<GPUDeviceLostInfo>((resolve) =>
    setTimeout(() => resolve({ reason: 'unknown', message: 'gone' } as GPUDeviceLostInfo), ms),
  ),
});
const partial = {} as GenerationResult;

describe('deviceWasLost', () => {
  it('answers a request refused for what it asked at once, however long a device loss is waited for', async () => {
    // Five of them waiting 4 s each would run past the test's 1 s timeout.
    const refused = [
      new RangeError('maxNewTokens "-1" is not a whole number >= 0'),
      new EngineBusyError('a generation is running'),
      new MethodUnavailableError('this method needs a draft model'),
      new ContextLimitError('the prompt is over the context'),
      new GenerationError(new MethodUnavailableError('no heads'), partial),
    ];
    for (const e of refused) expect(await deviceWasLost(never, e, 4_000), e.message).toBe(false);
  }, 1_000);

  it('waits for a device loss that follows another failure, and not longer than asked', async () => {
    const failed = new Error('Failed to download data from buffer');
    expect(await deviceWasLost(losing(20), failed, 60_000)).toBe(true);
    expect(await deviceWasLost(losing(20), new GenerationError(failed, partial), 60_000)).toBe(true);
    expect(await deviceWasLost(never, failed, 30)).toBe(false);
    expect(await deviceWasLost(null, failed, 60_000)).toBe(false);
  });
});
