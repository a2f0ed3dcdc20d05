/**
 * Which methods' rounds make one model call, the target's (callsOnlyTarget: the CLI keeps a short generation's
 * JavaScript on V8's baseline tiers for those only, src/runtime/v8-tiering.ts).
 */
import { describe, expect, it } from 'vitest';
import { callsOnlyTarget, METHODS } from './index';

describe('methods whose rounds call only the target', () => {
  it('are plain decoding, prompt lookup and lookahead; a draft model, heads or skipping passes (even optional) are more', () => {
    expect(METHODS.filter(callsOnlyTarget).map((m) => m.name)).toEqual(['ar', 'lookup', 'lookahead']);
  });
});
