const f = (a: any[][]): any[][] => a; return f(2 as any)
