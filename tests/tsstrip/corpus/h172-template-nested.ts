const n: number = 2; return `a${`b${n as number}c${`d${n * 2}`}`}e`
