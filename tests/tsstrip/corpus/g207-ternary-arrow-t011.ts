const c = 1; const f = c ? (x: (a: number, b?: string) => void): (a: number, b?: string) => void => x : (y: any) => y; return f(5 as any)
