class C { x: <U>(x: U) => U = 1 as any; m(a: <U>(x: U) => U): <U>(x: U) => U { return a } } return [new C().x, new C().m(4 as any)]
