const v = [1, 2] satisfies [number, string?, ...boolean[]]; return v
