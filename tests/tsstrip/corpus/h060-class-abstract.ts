abstract class Shape { abstract area(): number; abstract readonly name: string; describe(): string { return this.name + ":" + this.area() } }
class Sq extends Shape { name = "sq"; constructor(private_s: number) { super(); this.s = private_s } s: number; area() { return this.s ** 2 } }
return new Sq(3).describe()
