/** The additive bias for hidden positions: finite in fp16 and fp32, so no -inf ever reaches softmax. */
export const MASKED = -65504;
