const f = <U,>(a: U): U => a; const g = f<<V>(x: V) => V>((x) => x); return g(1)
