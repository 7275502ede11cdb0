let x: `prefix-${string}` = 5 as any; return x
