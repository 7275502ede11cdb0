class C { x: any[][] = 1 as any; m(a: any[][]): any[][] { return a } } return [new C().x, new C().m(4 as any)]
