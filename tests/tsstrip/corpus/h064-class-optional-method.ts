class A { m?(): void; n?(x: number): number { return x } } return [typeof new A().m, new A().n!(2)]
