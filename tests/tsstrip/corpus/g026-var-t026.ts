let x: typeof Math.max = 5 as any; return x
