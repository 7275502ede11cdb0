class A { m(x: number): number; m(x: string): string; m(x: any) { return x } } return new A().m(2)
