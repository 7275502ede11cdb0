type F = (a: number, b?: string, ...c: boolean[]) => void; type C = new (x: string) => object; type G = <T>(x: T) => T; type AC = abstract new () => object;
return typeof 1
