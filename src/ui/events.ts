/**
 * The events <spec-decoder> fires, prefixed with `sd-` (never a name the platform uses, like `error`) and typed:
 * `el.addEventListener('sd-round', (e) => e.detail.accepted)` type-checks once this module is imported (the element
 * imports it). Each also fires under its old unprefixed name, deprecated, for one release.
 */
import type { GenerationResult, RoundEvent } from '../engine/events';
import type { ProgressInfo } from '../model/source';
import type { LoadInfo } from '../worker/protocol';

export interface SpecDecoderErrorDetail {
  message: string;
}

/** Event name -> event, for every event the element fires. */
export interface SpecDecoderEventMap {
  /** The models are loaded (or were already): device, fallback, adapter, model shapes. */
  'sd-loaded': CustomEvent<LoadInfo>;
  /** One speculative round: accepted, rejected and target tokens, the verified tree, the drafter's note. */
  'sd-round': CustomEvent<RoundEvent>;
  /** A generation ended (also when cancelled: stopReason "cancelled"). */
  'sd-done': CustomEvent<GenerationResult>;
  /** Loading or generating failed, or the request was refused; the message is readable as it is. */
  'sd-error': CustomEvent<SpecDecoderErrorDetail>;
  /** Loading progress, in transformers.js's progress_callback shape. */
  'sd-progress': CustomEvent<ProgressInfo>;
}

export type SpecDecoderEventName = keyof SpecDecoderEventMap;

/**
 * The unprefixed names the element fired before 0.2, still fired beside the new ones.
 * @deprecated listen for the `sd-` names; these go in the next release.
 */
export const LEGACY_EVENT_NAMES: Partial<Record<SpecDecoderEventName, string>> = {
  'sd-loaded': 'loaded',
  'sd-round': 'round',
  'sd-done': 'done',
  'sd-error': 'error',
};

type Detail<K extends SpecDecoderEventName> = SpecDecoderEventMap[K] extends CustomEvent<infer D> ? D : never;

/** Fire `name` (bubbling, composed) and its deprecated unprefixed twin, if it has one. */
export function fire<K extends SpecDecoderEventName>(target: EventTarget, name: K, detail: Detail<K>): void {
  target.dispatchEvent(new CustomEvent(name, { detail, bubbles: true, composed: true }));
  const legacy = LEGACY_EVENT_NAMES[name];
  if (legacy) target.dispatchEvent(new CustomEvent(legacy, { detail, bubbles: true, composed: true }));
}

declare global {
  interface HTMLElementEventMap {
    'sd-loaded': SpecDecoderEventMap['sd-loaded'];
    'sd-round': SpecDecoderEventMap['sd-round'];
    'sd-done': SpecDecoderEventMap['sd-done'];
    'sd-error': SpecDecoderEventMap['sd-error'];
    'sd-progress': SpecDecoderEventMap['sd-progress'];
  }
}
