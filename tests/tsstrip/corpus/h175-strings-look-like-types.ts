const s = "let x: number = 1 as any"; const t = 'interface A {}'; return s + t
