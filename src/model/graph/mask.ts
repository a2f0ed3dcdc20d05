/** The graph uses the engine's mask constant (the engine owns the model contract). */
export { MASKED } from '../../engine/lm';
