const o = { a: 1 }; return `x${(() => { return { ...o } })().a}y${"}"}`
