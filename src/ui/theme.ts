/**
 * Shared styles: the colours, read from the page's custom properties with our defaults as fallbacks, so a page's
 * `spec-decoder { --sd-accepted: … }` reaches every inner element. Each element's :host sets private copies
 * (--_sd-…) from the public names and uses only those; nothing here sets a public --sd-… property, since a value
 * set on an inner :host would hide the page's value from everything inside it.
 *
 * @cssproperty --sd-accepted - accepted draft tokens (default #1a7f37); --sd-accepted-bg their background
 * @cssproperty --sd-rejected - rejected draft tokens (default #cf222e); --sd-rejected-bg their background
 * @cssproperty --sd-target - the target's own tokens (default #0969da); --sd-target-bg their background
 * @cssproperty --sd-muted - the prompt, unreached tree nodes, borders (default #6e7781)
 */
import { css } from 'lit';

export const tokenColours = css`
  :host {
    --_sd-accepted: var(--sd-accepted, #1a7f37);
    --_sd-accepted-bg: var(--sd-accepted-bg, #dafbe1);
    --_sd-rejected: var(--sd-rejected, #cf222e);
    --_sd-rejected-bg: var(--sd-rejected-bg, #ffebe9);
    --_sd-target: var(--sd-target, #0969da);
    --_sd-target-bg: var(--sd-target-bg, #ddf4ff);
    --_sd-muted: var(--sd-muted, #6e7781);
  }
`;
