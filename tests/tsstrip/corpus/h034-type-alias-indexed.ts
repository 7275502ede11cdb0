type A = { x: { y: number[] } }; type Y = A["x"]["y"][number]; const y: Y = 4; return y
