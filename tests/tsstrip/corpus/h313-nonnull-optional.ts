const a: any = { b: { c: 4 } }; return a!?.b!.c
