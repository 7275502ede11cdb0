const f = (...x: any[]) => x.length; const g = (x: any) => x; const a = 1, b = 2; return f(a < b, (g)(3))
