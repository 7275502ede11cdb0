const c = Math.random() < 2; const a: any = 1, b: any = 2; return c ? <number>a : <number>b
