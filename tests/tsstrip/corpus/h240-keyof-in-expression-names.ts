const keyof = 1, infer = 2, is = 3, asserts = 4, out = 5; return keyof + infer + is + asserts + out
