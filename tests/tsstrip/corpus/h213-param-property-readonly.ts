// @refuse: parameter property
// @transform
class P { constructor(readonly name: string, protected readonly age = 3) {} }
const p = new P("n"); return [p.name, (p as any).age]
