class C { x: ReturnType<typeof parseInt> = 1 as any; m(a: ReturnType<typeof parseInt>): ReturnType<typeof parseInt> { return a } } return [new C().x, new C().m(4 as any)]
