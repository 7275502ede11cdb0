let x: number = 1; const y: string = "a"; var z: boolean = true; return [x, y, z]
