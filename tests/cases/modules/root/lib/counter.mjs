let n = 0;
export const next = () => ++n;
