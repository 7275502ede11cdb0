const g = <T>(x: T): T => x; const h = <T,>(x: T) => [x]; const y: any = 3; return [g(1), h(2), <number>(y)]
