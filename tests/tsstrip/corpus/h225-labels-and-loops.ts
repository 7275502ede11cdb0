let n: number = 0; outer: for (let i: number = 0; i < 3; i++) { for (const j of [1, 2] as const) { if (j === 2) continue outer; n += j } } return n
