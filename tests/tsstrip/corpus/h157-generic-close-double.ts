const x: Array<Array<number>> = [[1]]; const y: Map<string, Map<string, number>>= new Map(); return [x, y.size]
