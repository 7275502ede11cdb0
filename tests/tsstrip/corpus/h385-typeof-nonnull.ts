const x: any = 1; return typeof x!
