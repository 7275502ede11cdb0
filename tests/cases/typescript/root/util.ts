export function double(x: number): number { return x * 2; }
export type Pair = [number, number];
