const f: (<T>(x: T) => T) | undefined = (x) => x; return f?.<string>("o")
