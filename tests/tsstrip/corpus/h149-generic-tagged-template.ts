function tag<T>(s: TemplateStringsArray, ...v: T[]): string { return s.raw.join("|") + v.length } return tag<number>`a${1}b${2}c`
