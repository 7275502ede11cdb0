export function double(x) { return x * 2; }
export const name = "util";
