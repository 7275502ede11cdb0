// @refuse: parameter property
// @transform
class P { constructor(public x: number, private y: number) {} sum() { return this.x + this.y } }
return new P(1, 2).sum()
