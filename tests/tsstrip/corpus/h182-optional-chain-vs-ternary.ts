const a: any = { b: 1 }; return a?.b ? "yes" : "no"
