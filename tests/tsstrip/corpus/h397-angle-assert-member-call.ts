const o: any = { f(x: number) { return [x] } }; return [(<any>o).f(1).length, <number>o.f(2)[0]]
