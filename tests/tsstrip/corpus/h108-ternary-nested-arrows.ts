const t = 1; const f = t > 0 ? (x: number) => x > 0 ? "pos" : "neg" : () => "none"; return [f(1), f(-1)]
