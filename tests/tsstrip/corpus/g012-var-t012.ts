let x: new (x: number) => object = 5 as any; return x
