const a: any = { b: { c: 3 } }; return a?.b!.c
