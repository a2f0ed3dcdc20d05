/**
 * `@customElement` that defines an element once: a page that loads the library twice (two script tags, a second
 * bundle) keeps the first definitions, where Lit's decorator threw "the name "sd-token-stream" has already been used
 * with this registry" and the second copy's import failed.
 */
export const defineOnce =
  (tagName: string) =>
  (element: CustomElementConstructor, context?: { addInitializer(run: () => void): void }): void => {
    const define = () => {
      if (!customElements.get(tagName)) customElements.define(tagName, element);
    };
    if (context) context.addInitializer(define);
    else define();
  };
