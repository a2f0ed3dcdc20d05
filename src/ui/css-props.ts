import { noChange } from 'lit';
import { type AttributePart, Directive, directive, type PartInfo, PartType } from 'lit/directive.js';

/**
 * Style properties set through the CSSOM on every render, never written as a style attribute: a host page whose
 * Content-Security-Policy does not allow inline styles blocks style attributes (Lit's styleMap writes one on its first
 * render), and the acceptance bars drew at height 0 and the drafters' colours went missing. Used as
 * `style=${cssProps({ height: '40%' })}`.
 */
class CssProps extends Directive {
  constructor(info: PartInfo) {
    super(info);
    if (info.type !== PartType.ATTRIBUTE) throw new Error('cssProps belongs in an attribute binding');
  }

  render(_props: Record<string, string>): typeof noChange {
    return noChange;
  }

  override update(part: AttributePart, [props]: [Record<string, string>]): typeof noChange {
    const { style } = part.element as HTMLElement;
    for (const [name, value] of Object.entries(props)) style.setProperty(name, value);
    return noChange;
  }
}

export const cssProps = directive(CssProps);
