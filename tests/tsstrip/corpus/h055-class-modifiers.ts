class A { public a = 1; private b = 2; protected c = 3; readonly d = 4; static readonly e = 5; public static f = 6 }
return [Object.keys(new A()), (A as any).e, (A as any).f]
