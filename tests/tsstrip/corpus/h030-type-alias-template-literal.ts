type Ev = `on${"Click" | "Key"}`; type Deep = `a${`b${number}`}c`;
const e: Ev = "onClick"; return e
