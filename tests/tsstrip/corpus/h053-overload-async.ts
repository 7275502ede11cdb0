async function f(x: number): Promise<number>;
async function f(x: any) { return x }
return await f(5)
