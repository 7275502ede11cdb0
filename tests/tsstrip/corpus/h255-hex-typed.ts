const h: number = 0xff; return h
