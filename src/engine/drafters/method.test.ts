/**
 * Which methods' rounds call a separate draft model (callsDraftModel: the CLI keeps a short generation's JavaScript
 * on V8's baseline tiers for the others only, src/runtime/v8-tiering.ts).
 */
import { describe, expect, it } from 'vitest';
import { callsDraftModel, METHODS } from './index';

describe('methods whose rounds call a draft model', () => {
  it("are the draft model's own and auto (which may use it); the target's methods, layer skipping and the heads are not", () => {
    expect(METHODS.filter(callsDraftModel).map((m) => m.name)).toEqual([
      'auto',
      'chain',
      'tree',
      'dynamic',
      'adaptive',
      'adaptive-tree',
      'merged',
    ]);
    expect(METHODS.filter((m) => !callsDraftModel(m)).map((m) => m.name)).toEqual([
      'ar',
      'lookup',
      'lookahead',
      'swift',
      'medusa',
      'eagle',
    ]);
  });
});
