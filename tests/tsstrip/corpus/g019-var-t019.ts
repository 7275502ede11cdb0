let x: (string | number)[] = 5 as any; return x
