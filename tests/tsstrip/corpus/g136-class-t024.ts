class C { x: import("./mod").T<string> = 1 as any; m(a: import("./mod").T<string>): import("./mod").T<string> { return a } } return [new C().x, new C().m(4 as any)]
