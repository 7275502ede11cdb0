{ function f(x: number): number; function f(x: any) { return x } return f(6) }
