let o: { get x(): number; set x(v: number) } = { x: 1 }; return o.x
