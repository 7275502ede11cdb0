// @refuse: parameter property
// @transform
class C { sum: number; constructor(private a: number, b: number) { this.sum = this.a + b } }
return new C(1, 2).sum
