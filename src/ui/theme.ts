/** Shared styles: the three token colours as CSS custom properties users can override. */
import { css } from 'lit';

export const tokenColours = css`
  :host {
    --sd-accepted: #1a7f37;
    --sd-accepted-bg: #dafbe1;
    --sd-rejected: #cf222e;
    --sd-rejected-bg: #ffebe9;
    --sd-target: #0969da;
    --sd-target-bg: #ddf4ff;
    --sd-muted: #6e7781;
  }
`;
