class C { x: Promise<void> | undefined = 1 as any; m(a: Promise<void> | undefined): Promise<void> | undefined { return a } } return [new C().x, new C().m(4 as any)]
