const c = 1; const f = c ? (x: import("./mod").T<string>): import("./mod").T<string> => x : (y: any) => y; return f(5 as any)
