class A { m() { return 1 } } class B extends A { override m(): number { return 2 } public override toString(): string { return "B" } } return [new B().m(), String(new B())]
