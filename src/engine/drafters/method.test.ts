/**
 * What each method's rounds call besides the target's verify call (roundCalls: the CLI keeps a short generation's
 * JavaScript on V8's baseline tiers by it, src/runtime/v8-tiering.ts).
 */
import { describe, expect, it } from 'vitest';
import { METHODS, type RoundCalls, roundCalls } from './index';

describe("what a method's rounds call", () => {
  it("the target alone or one heads call; target-sized passes by depth; the draft model's short calls (auto may use it)", () => {
    const of = (kind: RoundCalls) => METHODS.filter((m) => roundCalls(m) === kind).map((m) => m.name);
    expect(of('one-call')).toEqual(['ar', 'lookup', 'lookahead', 'medusa']);
    expect(of('several-calls')).toEqual(['swift', 'eagle']);
    expect(of('draft-model')).toEqual(['auto', 'chain', 'tree', 'dynamic', 'adaptive', 'adaptive-tree', 'merged']);
  });
});
