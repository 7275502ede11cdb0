type T = [number, string?, ...boolean[]]; type N = [first: number, second?: string, ...rest: any[]];
const t: T = [1]; return t
