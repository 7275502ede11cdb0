const a = 256; return [a >> 2, a >>> 1, a << 1, (a >>= 1), a >= 128]
