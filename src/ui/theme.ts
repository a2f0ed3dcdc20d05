/**
 * Shared styles: the colours, read from the page's custom properties with our defaults as fallbacks, so a page's
 * `spec-decoder { --sd-accepted: … }` reaches every inner element. Each element's :host sets private copies
 * (--_sd-…) from the public names and uses only those; nothing here sets a public --sd-… property, since a value
 * set on an inner :host would hide the page's value from everything inside it.
 *
 * The defaults follow the page's colour scheme (CSS light-dark(): the scheme the page uses, not only the one the
 * system prefers, so a light-only page stays light): in the dark scheme lighter colours on dark backgrounds, so that
 * the coloured text on the page's background (legend, stats) and the tokens on their own backgrounds keep WCAG AA's
 * 4.5:1 (light: 4.55-5.36; dark, on Chromium's #121212: 6.1-7.4, tokens on their backgrounds 6.1-6.4). Each colour
 * and its -bg are a pair: a page that sets one should set the other (one set alone meets the other's default, which
 * may be of the other scheme).
 *
 * @cssproperty --sd-accepted - accepted draft tokens (default #1a7f37, dark #3fb950); --sd-accepted-bg their background
 * @cssproperty --sd-rejected - rejected draft tokens (default #cf222e, dark #ff7b72); --sd-rejected-bg their background
 * @cssproperty --sd-target - the target's own tokens (default #0969da, dark #58a6ff); --sd-target-bg their background
 * @cssproperty --sd-muted - the prompt, unreached tree nodes, borders (default #6e7781, dark #8b949e)
 */
import { css, unsafeCSS } from 'lit';

/** Each colour's default in the light and the dark scheme. */
const PALETTE: readonly (readonly [name: string, light: string, dark: string])[] = [
  ['accepted', '#1a7f37', '#3fb950'],
  ['accepted-bg', '#dafbe1', '#0f2a18'],
  ['rejected', '#cf222e', '#ff7b72'],
  ['rejected-bg', '#ffebe9', '#3a1418'],
  ['target', '#0969da', '#58a6ff'],
  ['target-bg', '#ddf4ff', '#0c2340'],
  ['muted', '#6e7781', '#8b949e'],
];

/** The private copies of the colours, each the page's value or `fallback` of its defaults. */
const privateColours = (fallback: (light: string, dark: string) => string) =>
  unsafeCSS(
    PALETTE.map(([name, light, dark]) => `--_sd-${name}: var(--sd-${name}, ${fallback(light, dark)});`).join('\n'),
  );

export const tokenColours = css`
  :host {
    ${privateColours((light, dark) => `light-dark(${light}, ${dark})`)}
  }
  /* Browsers before light-dark() (Chrome 123, Safari 17.5, Firefox 120) would drop every colour: the light ones. */
  @supports not (color: light-dark(#000, #fff)) {
    :host {
      ${privateColours((light) => light)}
    }
  }
`;
