// the path names a Map entry
return { m: new Map([["k", () => 1]]) };
