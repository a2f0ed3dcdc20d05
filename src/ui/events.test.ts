import { describe, expect, expectTypeOf, it } from 'vitest';
import type { GenerationResult, RoundEvent } from '../engine/events';
import type { ProgressInfo } from '../model/source';
import type { LoadInfo } from '../worker/protocol';
import { fire, LEGACY_EVENT_NAMES, type SpecDecoderEventMap } from './events';

describe('the element events', () => {
  it('are typed on every HTMLElement (tsc checks these lines)', () => {
    expectTypeOf<HTMLElementEventMap['sd-round']>().toEqualTypeOf<CustomEvent<RoundEvent>>();
    expectTypeOf<HTMLElementEventMap['sd-done']>().toEqualTypeOf<CustomEvent<GenerationResult>>();
    expectTypeOf<HTMLElementEventMap['sd-loaded']>().toEqualTypeOf<CustomEvent<LoadInfo>>();
    expectTypeOf<HTMLElementEventMap['sd-error']>().toEqualTypeOf<CustomEvent<{ message: string }>>();
    expectTypeOf<HTMLElementEventMap['sd-progress']>().toEqualTypeOf<CustomEvent<ProgressInfo>>();
    // The native error event keeps its own type.
    expectTypeOf<HTMLElementEventMap['error']>().toEqualTypeOf<ErrorEvent>();
  });

  it('are all prefixed, and the old ones fire with their deprecated unprefixed twin', () => {
    const names = Object.keys(LEGACY_EVENT_NAMES) as (keyof SpecDecoderEventMap)[];
    expect(names.every((n) => n.startsWith('sd-'))).toBe(true);
    const target = new EventTarget();
    const seen: [string, unknown, boolean][] = [];
    for (const n of [...names, ...(Object.values(LEGACY_EVENT_NAMES) as string[]), 'sd-progress']) {
      target.addEventListener(n, (e) => seen.push([e.type, (e as CustomEvent).detail, e.bubbles && e.composed]));
    }
    fire(target, 'sd-error', { message: 'boom' });
    fire(target, 'sd-progress', { status: 'done', name: 'x' });
    expect(seen).toEqual([
      ['sd-error', { message: 'boom' }, true],
      ['error', { message: 'boom' }, true],
      ['sd-progress', { status: 'done', name: 'x' }, true],
    ]);
  });
});
