const a = false, b = 1; const f: any = a ? (b) : (c: number) => c * 2; return f(4)
