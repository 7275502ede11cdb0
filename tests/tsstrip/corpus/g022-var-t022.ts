let x: any[][] = 5 as any; return x
