const x: any = 2; return `${<number>x + 1}`
