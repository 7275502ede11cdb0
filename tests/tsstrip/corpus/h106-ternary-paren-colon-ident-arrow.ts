const a = true, b = 7; const g: any = a ? (b) : c => c; return g
