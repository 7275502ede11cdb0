const a = false, b = 7; const g: any = a ? (b) : c => c * 3; return g(2)
