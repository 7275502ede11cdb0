let o: { m(this: Window, x: number): void; get g(): number; set g(v: number) } = null as any; return o
