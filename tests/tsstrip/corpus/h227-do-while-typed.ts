let i: number = 0; do { i++ } while (i < (3 as number)); return i
