const f = <T,>(x: T): T => x; return `${f<number>(1)}${[1, 2].map((x: number): string => `<${x}>`).join("")}`
